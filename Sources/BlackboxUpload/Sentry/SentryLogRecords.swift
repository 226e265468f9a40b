#if Upload
    import BlackboxCompression
    import BlackboxFormat
    import BlackboxSentry
    import BlackboxSystem
    import Foundation

    /// Finished log archives as Sentry structured logs (`log` items, develop.sentry.dev/sdk/telemetry/
    /// logs/): each line a record with its time, level, body and `logger.name`, at most
    /// `recordsPerEnvelope` records or `maxPayloadBytes` per envelope. Read as a stream (archives are
    /// gzip files of up to the rotation size), so memory stays at one envelope.
    struct SentryLogRecords {
        var release: String?
        var environment: String?
        static let recordsPerEnvelope = 100
        static let maxPayloadBytes = 512 << 10

        func record(_ line: String) -> SentryLogRecord? {
            SentryLogRecord(line: line, release: release, environment: environment)
        }

        /// Calls `emit` with each envelope of the file's lines (a `.gz` file is inflated on the way).
        func envelopes(ofFile path: String, emit: (SentryEnvelope) throws -> Void) throws {
            guard let handle = FileHandle(forReadingAtPath: path) else {
                throw UploadFailure.file(path, errnoDescription())
            }
            defer { try? handle.close() }
            let inflater = path.hasSuffix(".gz") ? try GzipInflater() : nil
            let encoder = SentryEnvelope.jsonEncoder()
            var pending: [UInt8] = []
            var batch: [SentryLogRecord] = []
            var batchBytes = 0
            func flush() throws {
                guard !batch.isEmpty else { return }
                let payload = try encoder.encode(SentryLogRecord.Payload(items: batch))
                try emit(
                    SentryEnvelope(
                        sdk: SentryEvent.envelopeSDK,
                        items: [
                            .init(
                                type: "log", payload: payload, contentType: "application/vnd.sentry.items.log+json",
                                itemCount: batch.count)
                        ]))
                batch = []
                batchBytes = 0
            }
            func take(_ bytes: ArraySlice<UInt8>) throws {
                pending += bytes
                while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                    let line = String(decoding: pending[..<newline], as: UTF8.self)
                    pending.removeSubrange(...newline)
                    guard let record = record(line) else { continue }
                    batch.append(record)
                    batchBytes += line.utf8.count + 128
                    if batch.count >= Self.recordsPerEnvelope || batchBytes >= Self.maxPayloadBytes { try flush() }
                }
                // A "line" with no end in sight is not one of ours: drop it rather than grow.
                if pending.count > Self.maxPayloadBytes { pending.removeAll() }
            }
            while let chunk = try handle.read(upToCount: 64 << 10), !chunk.isEmpty {
                if let inflater {
                    try chunk.withUnsafeBytes { bytes in try inflater.feed(bytes) { try take($0) } }
                } else {
                    try take(ArraySlice(chunk))
                }
            }
            try flush()
        }
    }
#endif
