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
        copySmall(to: base + count, from: source, count: bytes.count)
        count += bytes.count
    }

    /// Lines are made of many short pieces; a call to memmove per piece cost more than the copy.
    /// Up to 16 bytes are copied with two overlapping word moves or a byte loop.
    @inline(__always)
    private func copySmall(to destination: UnsafeMutableRawPointer, from source: UnsafeRawPointer, count n: Int) {
        if n > 16 {
            destination.copyMemory(from: source, byteCount: n)
        } else if n >= 8 {
            let head = source.loadUnaligned(as: UInt64.self)
            let tail = source.loadUnaligned(fromByteOffset: n - 8, as: UInt64.self)
            destination.storeBytes(of: head, as: UInt64.self)
            destination.storeBytes(of: tail, toByteOffset: n - 8, as: UInt64.self)
        } else {
            for i in 0..<n { destination.storeBytes(of: source.load(fromByteOffset: i, as: UInt8.self), toByteOffset: i, as: UInt8.self) }
        }
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

    mutating func appendDecimal(_ value: UInt64) {
        reserve(20)
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)  // 24 bytes of scratch, filled from the end
        var v = value
        var n = 0
        withUnsafeMutableBytes(of: &digits) { scratch in
            repeat {
                n += 1
                scratch[24 - n] = UInt8(truncatingIfNeeded: v % 10) + 48
                v /= 10
            } while v > 0
            (base + count).copyMemory(from: scratch.baseAddress! + 24 - n, byteCount: n)
        }
        count += n
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
