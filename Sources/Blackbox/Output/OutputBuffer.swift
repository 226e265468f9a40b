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
    /// counting), written backwards into scratch space, then copied.
    mutating func appendDecimal(_ value: UInt64) {
        reserve(20)
        let pairs: StaticString =
            "0001020304050607080910111213141516171819202122232425262728293031323334353637383940414243444546474849505152535455565758596061626364656667686970717273747576777879808182838485868788899091929394959697989900"
        let table = UnsafeRawPointer(pairs.utf8Start)
        var scratch: (UInt64, UInt64, UInt64) = (0, 0, 0)
        let written = withUnsafeMutableBytes(of: &scratch) { raw -> Int in
            let end = raw.baseAddress.unsafelyUnwrapped + 24
            var cursor = end
            var v = value
            while v >= 100 {
                let pair = Int(v % 100) << 1
                v /= 100
                cursor -= 2
                cursor.storeBytes(of: table.loadUnaligned(fromByteOffset: pair, as: UInt16.self), as: UInt16.self)
            }
            if v >= 10 {
                cursor -= 2
                cursor.storeBytes(
                    of: table.loadUnaligned(fromByteOffset: Int(v) << 1, as: UInt16.self), as: UInt16.self)
            } else {
                cursor -= 1
                cursor.storeBytes(of: UInt8(truncatingIfNeeded: v) &+ 48, as: UInt8.self)
            }
            let n = end - cursor
            copyBytes(to: base + count, from: cursor, count: n)
            return n
        }
        count += written
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
