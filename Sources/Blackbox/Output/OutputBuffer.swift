/// A growable byte buffer the writer formats lines into; one `write(2)` per batch drains it.
/// Hand-rolled rather than `[UInt8]` so that appends are plain stores without per-call checks
/// for uniqueness.
struct OutputBuffer: ~Copyable {
    private(set) var base: UnsafeMutableRawPointer
    private(set) var count = 0
    private var capacity: Int

    init(capacity: Int = 256 << 10) {
        self.capacity = capacity
        self.base = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 16)
    }

    deinit { base.deallocate() }

    var bytes: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: base, count: count) }
    var isEmpty: Bool { count == 0 }

    mutating func removeAll() { count = 0 }

    /// Drops everything after `newCount` (used to take back a partly formatted line).
    mutating func truncate(to newCount: Int) { count = min(count, newCount) }

    /// Writes `value` little-endian over 8 bytes already appended at `offset` (a length known only
    /// once what it counts was written).
    mutating func overwrite(littleEndian value: UInt64, at offset: Int) {
        precondition(offset >= 0 && offset + 8 <= count, "overwrite past the end of the buffer")
        base.storeBytes(of: value.littleEndian, toByteOffset: offset, as: UInt64.self)
    }

    @inline(__always)
    mutating func reserve(_ extra: Int) {
        if count + extra > capacity { grow(count + extra) }
    }

    private mutating func grow(_ needed: Int) {
        var newCapacity = capacity * 2
        while newCapacity < needed { newCapacity *= 2 }
        let newBase = UnsafeMutableRawPointer.allocate(byteCount: newCapacity, alignment: 16)
        newBase.copyMemory(from: base, byteCount: count)
        base.deallocate()
        base = newBase
        capacity = newCapacity
    }

    @inline(__always)
    mutating func append(_ byte: UInt8) {
        reserve(1)
        base.storeBytes(of: byte, toByteOffset: count, as: UInt8.self)
        count += 1
    }

    @inline(__always)
    mutating func append(_ bytes: UnsafeRawBufferPointer) {
        guard let source = bytes.baseAddress, !bytes.isEmpty else { return }
        reserve(bytes.count)
        copyBytes(to: base + count, from: source, count: bytes.count)
        count += bytes.count
    }

    /// Literal text (a `StaticString`, never a `String`: no bridging on the hot path).
    @inline(__always)
    mutating func append(literal text: StaticString) {
        append(UnsafeRawBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    mutating func append(string text: String) {
        var text = text
        text.withUTF8 { append(UnsafeRawBufferPointer($0)) }
    }

    /// Two digits at a time from a literal table (a `StaticString`: no lazy global, no reference
    /// counting), written backwards straight into the buffer.
    mutating func appendDecimal(_ value: UInt64) {
        reserve(20)
        if value < 10 {  // line numbers, small counts: the common case needs no table
            base.storeBytes(of: UInt8(truncatingIfNeeded: value) &+ 48, toByteOffset: count, as: UInt8.self)
            count += 1
            return
        }
        var digits = 2
        var limit: UInt64 = 100
        while digits < 20 && value >= limit {
            digits += 1
            if digits < 20 { limit &*= 10 }
        }
        let pairs: StaticString =
            "00010203040506070809101112131415161718192021222324252627282930313233343536373839404142434445464748495051525354555657585960616263646566676869707172737475767778798081828384858687888990919293949596979899"
        let table = UnsafeRawPointer(pairs.utf8Start)
        var v = value
        var end = count + digits
        while v >= 100 {
            let pair = Int(v % 100) << 1
            v /= 100
            end -= 2
            base.storeBytes(
                of: table.loadUnaligned(fromByteOffset: pair, as: UInt16.self), toByteOffset: end, as: UInt16.self)
        }
        if v >= 10 {
            base.storeBytes(
                of: table.loadUnaligned(fromByteOffset: Int(v) << 1, as: UInt16.self), toByteOffset: end - 2,
                as: UInt16.self)
        } else {
            base.storeBytes(of: UInt8(truncatingIfNeeded: v) &+ 48, toByteOffset: end - 1, as: UInt8.self)
        }
        count += digits
    }

    mutating func appendDecimal(_ value: Int64) {
        if value < 0 {
            append(UInt8(ascii: "-"))
            appendDecimal(value.magnitude)
        } else {
            appendDecimal(UInt64(value))
        }
    }

    /// Appends `value` as exactly `width` digits, zero-padded (for timestamps).
    mutating func appendPadded(_ value: Int, width: Int) {
        reserve(width)
        var v = value
        for i in stride(from: width - 1, through: 0, by: -1) {
            base.storeBytes(of: UInt8(truncatingIfNeeded: v % 10) + 48, toByteOffset: count + i, as: UInt8.self)
            v /= 10
        }
        count += width
    }
}
