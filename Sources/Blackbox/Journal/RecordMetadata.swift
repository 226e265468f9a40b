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

/// Rendered metadata entries ready to be written into a record.
struct EncodedMetadata {
    var entries: [(key: String, value: String)] = []

    var byteCount: Int {
        guard !entries.isEmpty else { return 0 }
        return entries.reduce(2) { $0 + 6 + $1.key.utf8.count + $1.value.utf8.count }
    }

    func write(into writer: inout RecordWriter) {
        guard !entries.isEmpty else { return }
        writer.append(UInt16(entries.count))
        for var (key, value) in entries {
            writer.append(UInt16(key.utf8.count))
            key.withUTF8 { writer.append(UnsafeRawBufferPointer($0)) }
            writer.append(UInt32(value.utf8.count))
            value.withUTF8 { writer.append(UnsafeRawBufferPointer($0)) }
        }
    }
}
