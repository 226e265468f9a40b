/// A log call's plain error value, carried at the end of its record (`RecordFlags.carriesErrorValue`)
/// for the writer of the same process to describe (`DeferredErrorDescriptions`).
///
/// ```
/// 0   u64  the error type's facts (`ErrorTypeFacts`, never freed), as an address
/// 8   u64  that address XOR this process's key: a record another process wrote never matches
/// 16  16   the value's bytes, as its box holds them (`InlineErrorValue`), zero after its size
/// ```
///
/// In the record rather than in a table beside the journal: the call writes the record's bytes
/// anyway, while a slot of its own was a second stream of memory (24 bytes per 64 of journal) and a
/// call to hold it (leaving that call out saved ~35 ns of a ~1 µs call in ablations; this layout
/// saves part of it, issue 52). Recovery and crash reports read the records of a dead process, whose
/// addresses mean nothing here: they keep the type name the record's metadata holds.
enum RecordErrorValue {
    static let size = 32
    private static let factsOffset = 0
    private static let checkOffset = 8
    private static let valueOffset = 16

    /// Random per process (a forked child shares its parent's facts and key alike).
    private static let processKey = UInt64.random(in: 1...UInt64.max)

    /// Writes `facts` and the `count` bytes at `value` (at most `InlineErrorValue.capacity`).
    @inline(__always)
    static func write(
        facts: Unmanaged<ErrorTypeFacts>, value: UnsafeRawPointer, count: Int, into writer: inout RecordWriter
    ) {
        assert(count <= InlineErrorValue.capacity)
        let address = UInt64(UInt(bitPattern: facts.toOpaque()))
        writer.append(address)
        writer.append(address ^ processKey)
        writer.append(UInt64(0))
        writer.append(UInt64(0))
        copyBytes(to: writer.base + writer.offset - InlineErrorValue.capacity, from: value, count: count)
    }

    /// The facts and value a record of this process carries; nil for another process's record.
    static func read(_ bytes: UnsafeRawBufferPointer) -> (facts: Unmanaged<ErrorTypeFacts>, value: InlineBytes)? {
        guard bytes.count == size else { return nil }
        let address = bytes.loadUnaligned(fromByteOffset: factsOffset, as: UInt64.self)
        guard address != 0, address ^ processKey == bytes.loadUnaligned(fromByteOffset: checkOffset, as: UInt64.self),
            let pointer = UnsafeRawPointer(bitPattern: UInt(address))
        else { return nil }
        let value = InlineBytes(
            low: bytes.loadUnaligned(fromByteOffset: valueOffset, as: UInt64.self),
            high: bytes.loadUnaligned(fromByteOffset: valueOffset + 8, as: UInt64.self))
        return (Unmanaged<ErrorTypeFacts>.fromOpaque(pointer), value)
    }

    /// A copied value, aligned for any type `InlineErrorValue` copies (at most a word's alignment).
    struct InlineBytes {
        var low: UInt64
        var high: UInt64

        /// `body` with the value's address.
        mutating func withAddress<Result>(_ body: (UnsafeRawPointer) -> Result) -> Result {
            withUnsafePointer(to: &self) { body(UnsafeRawPointer($0)) }
        }
    }
}
