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
    /// A log call's `error:`: written as the value of an `error` entry in its sorted place, after an
    /// `error` entry of the app's own (the writer replaces the last one's value by the error's
    /// description: `DescribedRecord`). Apart from `entries` so that a call with an error does not
    /// insert into them.
    var errorTypeName: String? = nil

    var isEmpty: Bool { entries.isEmpty && errorTypeName == nil }

    var byteCount: Int {
        guard !isEmpty else { return 0 }
        let errorCount = errorTypeName.map { 6 + Self.errorKey.utf8.count + $0.utf8.count } ?? 0
        return entries.reduce(2 + errorCount) { $0 + 6 + $1.key.utf8.count + $1.value.utf8.count }
    }

    private static let errorKey = "error"

    func write(into writer: inout RecordWriter) {
        guard !isEmpty else { return }
        writer.append(UInt16(entries.count + (errorTypeName == nil ? 0 : 1)))
        var errorEntry = errorTypeName
        for (key, value) in entries {
            if let name = errorEntry, key > Self.errorKey {
                Self.write(Self.errorKey, name, into: &writer)
                errorEntry = nil
            }
            Self.write(key, value, into: &writer)
        }
        if let name = errorEntry { Self.write(Self.errorKey, name, into: &writer) }
    }

    private static func write(_ key: String, _ value: String, into writer: inout RecordWriter) {
        writer.append(UInt16(key.utf8.count))
        withUTF8Bytes(key) { writer.append(UnsafeRawBufferPointer($0)) }
        writer.append(UInt32(value.utf8.count))
        withUTF8Bytes(value) { writer.append(UnsafeRawBufferPointer($0)) }
    }
}
