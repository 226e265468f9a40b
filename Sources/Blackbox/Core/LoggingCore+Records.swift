/// Building records from the two front ends: swift-log events (text) and `FastLogMessage` (segments).
extension LoggingCore {
    /// The longest source file name kept in a record.
    static let maxFileNameBytes = 512

    func appendText(
        level: LogLevel, label: LabelHandle, message: String, metadata: EncodedMetadata, file: String, line: UInt
    ) {
        let timestamp = wallClockNanoseconds()
        let threadID = currentThreadID()
        withUTF8Bytes(message) { messageBytes in
            withUTF8Bytes(file) { fileBytes in
                appendText(
                    level: level, label: label, message: UnsafeRawBufferPointer(messageBytes), metadata: metadata,
                    file: UnsafeRawBufferPointer(fileBytes), line: line, timestamp: timestamp, threadID: threadID)
            }
        }
    }

    /// The record itself, from bytes. Kept out of the closures above so that nothing is captured or
    /// copied (the metadata in particular is only borrowed).
    private func appendText(
        level: LogLevel, label: LabelHandle, message: UnsafeRawBufferPointer, metadata: borrowing EncodedMetadata,
        file: UnsafeRawBufferPointer, line: UInt, timestamp: UInt64, threadID: UInt32
    ) {
        let labelBytes = label.bytes
        let fileCount = min(file.count, Self.maxFileNameBytes)
        let fixed = RecordLayout.headerSize + labelBytes.count + fileCount
        let limit = journal.maxRecordSize
        var flags = RecordFlags()
        var metadataCount = metadata.entries.isEmpty ? 0 : metadata.byteCount
        let metadataFits = fixed + metadataCount <= limit / 2
        if !metadataFits {
            // The marker entry says the metadata was cut; `.truncated` is about the message only.
            metadataCount = Self.metadataCutMarker.byteCount
        }
        var messageCount = message.count
        if fixed + metadataCount + messageCount > limit {
            messageCount = utf8Prefix(message, limit - fixed - metadataCount)
            flags.insert(.truncated)
        }
        let size = fixed + metadataCount + messageCount
        guard let slot = reserve(size, level: level) else { return }
        var writer = RecordWriter(base: slot.record)
        writer.append(labelBytes)
        writer.append(UnsafeRawBufferPointer(start: file.baseAddress, count: fileCount))
        writer.append(UnsafeRawBufferPointer(start: message.baseAddress, count: messageCount))
        if !metadataFits {
            Self.metadataCutMarker.write(into: &writer)
        } else if metadataCount > 0 {
            metadata.write(into: &writer)
        }
        writer.writeHeader(
            timestamp: timestamp, threadID: threadID, line: UInt32(truncatingIfNeeded: line), kind: .text,
            level: level, labelCount: labelBytes.count, fileCount: fileCount, flags: flags,
            messageCount: messageCount, metadataCount: metadataCount)
        commit(slot, size: size, level: level)
    }

    private static let metadataCutMarker = EncodedMetadata(entries: [("blackbox.metadata", "<cut: too large>")])

    @usableFromInline
    func appendSegments(
        level: LogLevel, label: LabelHandle, message: inout FastLogMessage, file: StaticString, line: UInt
    ) {
        let timestamp = wallClockNanoseconds()
        let threadID = currentThreadID()
        let labelBytes = label.bytes
        let fileCount = min(file.utf8CodeUnitCount, Self.maxFileNameBytes)
        let messageCount = message.segments.encodedCount
        let size = RecordLayout.headerSize + labelBytes.count + fileCount + messageCount
        guard let slot = reserve(size, level: level) else { return }
        var writer = RecordWriter(base: slot.record)
        writer.append(labelBytes)
        writer.append(UnsafeRawBufferPointer(start: file.utf8Start, count: fileCount))
        message.segments.copy(to: slot.record + writer.offset)
        writer.writeHeader(
            timestamp: timestamp, threadID: threadID, line: UInt32(truncatingIfNeeded: line), kind: .segments,
            level: level, labelCount: labelBytes.count, fileCount: fileCount, flags: [], messageCount: messageCount,
            metadataCount: 0)
        commit(slot, size: size, level: level)
    }
}

/// The longest prefix of `bytes` of at most `limit` bytes that does not split a UTF-8 sequence.
func utf8Prefix(_ bytes: UnsafeRawBufferPointer, _ limit: Int) -> Int {
    guard limit < bytes.count else { return bytes.count }
    var count = max(0, limit)
    while count > 0 && bytes[count] & 0xC0 == 0x80 { count -= 1 }
    return count
}

/// A `String`'s UTF-8 bytes without `withUTF8`'s copy-on-write path, which retained and re-wrapped
/// the string's storage twice per call (measured with callgrind); falls back to it for strings that
/// are not stored contiguously.
@inlinable
@inline(__always)
func withUTF8Bytes<R>(_ text: String, _ body: (UnsafeBufferPointer<UInt8>) -> R) -> R {
    if let result = text.utf8.withContiguousStorageIfAvailable(body) { return result }
    var copy = text
    return copy.withUTF8(body)
}
