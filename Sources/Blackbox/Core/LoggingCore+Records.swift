/// Building records from the two front ends: swift-log events (text) and `FastLogMessage` (segments).
extension LoggingCore {
    /// The longest source file name kept in a record.
    static let maxFileNameBytes = 512

    /// The longest function name kept in a record (when one is: `recordsFunctions`).
    static let maxFunctionNameBytes = 256

    /// `function` is kept only when an output shows it (`recordsFunctions`). `describingLater`: the
    /// error whose type name `metadata`'s last `error` entry holds, described by the writer
    /// (`DeferredErrorDescriptions`); `captureCountedByWriter`: the writer counts it for its call
    /// site's report (`CaptureGates`). True when the writer was given the error.
    @discardableResult
    func appendText(
        level: LogLevel, label: LabelHandle, message: String, metadata: EncodedMetadata, file: String,
        function: String = "", line: UInt, timestamp: UInt64 = wallClockNanoseconds(),
        describingLater error: BorrowedError? = nil, captureCountedByWriter: Bool = false
    ) -> Bool {
        let threadID = currentThreadID()
        return withUTF8Bytes(message) { messageBytes in
            withUTF8Bytes(file) { fileBytes in
                guard recordsFunctions, !function.isEmpty else {
                    return appendText(
                        level: level, label: label, message: UnsafeRawBufferPointer(messageBytes), metadata: metadata,
                        file: UnsafeRawBufferPointer(fileBytes), function: nil, line: line, timestamp: timestamp,
                        threadID: threadID, describingLater: error, captureCountedByWriter: captureCountedByWriter)
                }
                return withUTF8Bytes(function) { functionBytes in
                    appendText(
                        level: level, label: label, message: UnsafeRawBufferPointer(messageBytes), metadata: metadata,
                        file: UnsafeRawBufferPointer(fileBytes), function: UnsafeRawBufferPointer(functionBytes),
                        line: line, timestamp: timestamp, threadID: threadID, describingLater: error,
                        captureCountedByWriter: captureCountedByWriter)
                }
            }
        }
    }

    /// The record itself, from bytes. Kept out of the closures above so that nothing is captured or
    /// copied (the metadata in particular is only borrowed).
    private func appendText(
        level: LogLevel, label: LabelHandle, message: UnsafeRawBufferPointer, metadata: borrowing EncodedMetadata,
        file: UnsafeRawBufferPointer, function: UnsafeRawBufferPointer?, line: UInt, timestamp: UInt64,
        threadID: UInt32, describingLater error: BorrowedError?, captureCountedByWriter: Bool
    ) -> Bool {
        let labelBytes = label.bytes
        let fileCount = min(file.count, Self.maxFileNameBytes)
        let functionCount = function.map { 1 + utf8Prefix($0, Self.maxFunctionNameBytes) } ?? 0
        let fixed = RecordLayout.headerSize + labelBytes.count + fileCount + functionCount
        let limit = journal.maxRecordSize
        var flags: RecordFlags = function == nil ? [] : .carriesFunction
        var metadataCount = metadata.byteCount
        let metadataFits = fixed + metadataCount <= limit / 2
        if !metadataFits {
            // The marker entry says the metadata was cut; `.truncated` is about the message only.
            metadataCount = Self.metadataCutMarker.byteCount
        } else if let error {
            flags.insert(.describesErrorLater)
            if captureCountedByWriter { flags.insert(.captureCountedByWriter) }
            // A plain value travels in the record; any other error waits in `errorDescriptions`.
            if error.inlineFacts != nil { flags.insert(.carriesErrorValue) }
        }
        let errorValueCount = RecordErrorValue.count(in: flags)
        var messageCount = message.count
        if fixed + metadataCount + errorValueCount + messageCount > limit {
            messageCount = utf8Prefix(message, limit - fixed - metadataCount - errorValueCount)
            flags.insert(.truncated)
        }
        let size = fixed + metadataCount + messageCount + errorValueCount
        guard let slot = reserve(size, level: level) else { return false }
        let defersError = flags.contains(.describesErrorLater)
        assert(!defersError || RecordLayout.aligned(size) >= DeferredErrorDescriptions.bytesPerSlot)
        if defersError, errorValueCount == 0, !slot.direct, let error {
            errorDescriptions.hold(error, for: slot.position, size: RecordLayout.aligned(size))
        }
        var writer = RecordWriter(base: slot.record)
        writer.append(labelBytes)
        writer.append(UnsafeRawBufferPointer(start: file.baseAddress, count: fileCount))
        if let function { writer.appendFunction(function, count: functionCount - 1) }
        writer.append(UnsafeRawBufferPointer(start: message.baseAddress, count: messageCount))
        if !metadataFits {
            Self.metadataCutMarker.write(into: &writer)
        } else if metadataCount > 0 {
            metadata.write(into: &writer)
        }
        if errorValueCount > 0, let error, let facts = error.inlineFacts {
            RecordErrorValue.write(facts: facts, value: error.inlineValueBytes, into: &writer)
        }
        writer.writeHeader(
            timestamp: timestamp, threadID: threadID, line: UInt32(truncatingIfNeeded: line), kind: .text,
            level: level, labelCount: labelBytes.count, fileCount: fileCount + functionCount, flags: flags,
            messageCount: messageCount, metadataCount: metadataCount)
        // A record without the error entry (its metadata cut) has nothing the description replaces.
        commit(slot, size: size, level: level, describing: error)
        return defersError && !slot.direct
    }

    private static var metadataCutMarker: EncodedMetadata {
        EncodedMetadata(entries: [("blackbox.metadata", "<cut: too large>")])
    }

    @usableFromInline
    func appendSegments(
        level: LogLevel, label: LabelHandle, message: inout FastLogMessage, file: StaticString,
        function: StaticString, line: UInt
    ) {
        let timestamp = wallClockNanoseconds()
        let threadID = currentThreadID()
        let labelBytes = label.bytes
        let fileCount = min(file.utf8CodeUnitCount, Self.maxFileNameBytes)
        let function =
            recordsFunctions && function.hasPointerRepresentation
            ? UnsafeRawBufferPointer(start: function.utf8Start, count: function.utf8CodeUnitCount) : nil
        let functionCount = function.map { 1 + utf8Prefix($0, Self.maxFunctionNameBytes) } ?? 0
        let messageCount = message.segments.encodedCount
        let size = RecordLayout.headerSize + labelBytes.count + fileCount + functionCount + messageCount
        guard let slot = reserve(size, level: level) else { return }
        var writer = RecordWriter(base: slot.record)
        writer.append(labelBytes)
        writer.append(UnsafeRawBufferPointer(start: file.utf8Start, count: fileCount))
        if let function { writer.appendFunction(function, count: functionCount - 1) }
        message.segments.copy(to: slot.record + writer.offset)
        writer.writeHeader(
            timestamp: timestamp, threadID: threadID, line: UInt32(truncatingIfNeeded: line), kind: .segments,
            level: level, labelCount: labelBytes.count, fileCount: fileCount + functionCount,
            flags: function == nil ? [] : .carriesFunction, messageCount: messageCount, metadataCount: 0)
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
