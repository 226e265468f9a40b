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

    /// The bytes a record with `flags` carries after its metadata.
    static func count(in flags: RecordFlags) -> Int { flags.contains(.carriesErrorValue) ? size : 0 }

    /// Writes `facts` and the value at `value`, as many bytes as the facts' `inlineSize` says: all 32
    /// bytes always, so that a record flagged as carrying a value never holds stale ones (facts without
    /// a size, which the log handler never passes, get a check that fails: the type name is kept).
    @inline(__always)
    static func write(facts: Unmanaged<ErrorTypeFacts>, value: UnsafeRawPointer, into writer: inout RecordWriter) {
        // An empty value (an error struct without fields) has size 0 and travels all the same.
        let size = facts._withUnsafeGuaranteedRef(\.inlineSize)
        assert(size != nil, "only values InlineErrorValue copies travel")
        let address = UInt64(UInt(bitPattern: facts.toOpaque()))
        writer.append(address)
        writer.append(size != nil ? address ^ processKey : ~(address ^ processKey))
        writer.append(UInt64(0))
        writer.append(UInt64(0))
        copyBytes(
            to: writer.base + writer.offset - InlineErrorValue.capacity, from: value,
            count: min(size ?? 0, InlineErrorValue.capacity))
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
