/// Metadata in a record: `u16 count`, then per entry `u16 key length, key, u32 value length, value`.
/// Values are already rendered to text and redacted on the caller's side, so secrets never reach the
/// journal file.
struct MetadataReader: Sequence {
    let bytes: UnsafeRawBufferPointer

    var isEmpty: Bool { bytes.count < 2 || bytes.loadUnaligned(as: UInt16.self) == 0 }

    struct Iterator: IteratorProtocol {
        let bytes: UnsafeRawBufferPointer
        var offset = 2
        var remaining: Int

        /// Stops at the first entry that does not fit: recovered bytes may be damaged.
        mutating func next() -> (key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer)? {
            guard remaining > 0, offset + 2 <= bytes.count else { return nil }
            let keyCount = Int(bytes.loadUnaligned(fromByteOffset: offset, as: UInt16.self))
            let keyStart = offset + 2
            guard keyStart + keyCount + 4 <= bytes.count else { return nil }
            let valueCount = Int(bytes.loadUnaligned(fromByteOffset: keyStart + keyCount, as: UInt32.self))
            let valueStart = keyStart + keyCount + 4
            guard valueStart + valueCount <= bytes.count else { return nil }
            remaining -= 1
            offset = valueStart + valueCount
            return (
                UnsafeRawBufferPointer(rebasing: bytes[keyStart..<keyStart + keyCount]),
                UnsafeRawBufferPointer(rebasing: bytes[valueStart..<valueStart + valueCount])
            )
        }
    }

    func makeIterator() -> Iterator {
        Iterator(bytes: bytes, remaining: bytes.count >= 2 ? Int(bytes.loadUnaligned(as: UInt16.self)) : 0)
    }
}

/// Rendered metadata entries ready to be written into a record, sorted by key.
struct EncodedMetadata {
    var entries: [(key: String, value: String)] = []
    /// A log call's `error:`: an `error` entry naming the error's type (`errorEntryBytes`, kept by
    /// `ErrorTypeFacts` and alive for the call), written in its sorted place, after an `error` entry
    /// of the app's own (the writer replaces the last one's value by the error's description:
    /// `DescribedRecord`). Apart from `entries` so that a call with an error does not insert into them.
    var errorEntry: UnsafeRawBufferPointer? = nil

    var isEmpty: Bool { entries.isEmpty && errorEntry == nil }

    var byteCount: Int {
        guard !isEmpty else { return 0 }
        return entries.reduce(2 + (errorEntry?.count ?? 0)) { $0 + 6 + $1.key.utf8.count + $1.value.utf8.count }
    }

    /// An `error` entry whose value is `typeName`, as `write` puts entries in a record: made once
    /// per error type, so that a call copies it whole.
    static func errorEntryBytes(typeName: String) -> [UInt8] {
        var bytes: [UInt8] = []
        withUnsafeBytes(of: UInt16(5).littleEndian) { bytes.append(contentsOf: $0) }
        bytes.append(contentsOf: "error".utf8)
        withUnsafeBytes(of: UInt32(typeName.utf8.count).littleEndian) { bytes.append(contentsOf: $0) }
        bytes.append(contentsOf: typeName.utf8)
        return bytes
    }

    func write(into writer: inout RecordWriter) {
        guard !isEmpty else { return }
        writer.append(UInt16(entries.count + (errorEntry == nil ? 0 : 1)))
        var errorEntry = errorEntry
        for (key, value) in entries {
            if let entry = errorEntry, Self.sortsAfterErrorKey(key) {
                writer.append(entry)
                errorEntry = nil
            }
            writer.append(UInt16(key.utf8.count))
            withUTF8Bytes(key) { writer.append(UnsafeRawBufferPointer($0)) }
            writer.append(UInt32(value.utf8.count))
            withUTF8Bytes(value) { writer.append(UnsafeRawBufferPointer($0)) }
        }
        if let entry = errorEntry { writer.append(entry) }
    }

    /// `key > "error"` by bytes, decided by the first byte for most keys (a `String` comparison per
    /// entry was a tenth of what the error entry cost its caller); the order `entries` is sorted in,
    /// as UTF-8 bytes order as scalars do.
    @inline(__always)
    private static func sortsAfterErrorKey(_ key: String) -> Bool {
        guard let first = key.utf8.first else { return false }
        if first != UInt8(ascii: "e") { return first > UInt8(ascii: "e") }
        return key > "error"
    }
}
