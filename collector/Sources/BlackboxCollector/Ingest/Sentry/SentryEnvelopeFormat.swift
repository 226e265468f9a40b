import BlackboxFormat
import BlackboxSentry
import Crypto
import Foundation

/// The Sentry protocol's envelope as an upload format beside Blackbox's zip: the decoded envelope is
/// the stored blob, its events become reports, its sessions release health, its logs a log file of
/// the bundle (indexed for search), its attachments files of the bundle. Items Blackbox has no use
/// for (`client_report`, `transaction`, `span`, `profile`, `replay_*`, `check_in`, unknown types) are
/// accepted and dropped, and counted. Files are named `items/<n>.<type>` (attachments
/// `items/<n>-<file name>`), so `extract` finds an item again by its number.
struct SentryEnvelopeFormat: BundleFormat {
    let limits: IngestLimits
    /// Envelopes held in memory by inspections running now (shared with the zip format's budget).
    let inspectionMemory: MemoryBudget?
    var events = SentryEventReport()
    /// Where envelopes too large to read on the request's task are inspected.
    var pool = InspectionPool.shared

    /// An envelope is inspected in memory: its decoded size is bounded like a bundle's reports
    /// (`maxReportBytesPerBundle`, 32 MiB by default; Sentry's own limit for an event is 1 MB).
    var maxEnvelopeBytes: Int { limits.maxReportBytesPerBundle }

    /// An `event` item's bytes: Sentry's own bound (Relay's `max_event_size`), below `maxReportBytes`.
    static let maxEventItemBytes = 1 << 20
    /// A `session` or `sessions` item's bytes: an SDK's are a few hundred; a larger one is dropped unread.
    static let maxSessionItemBytes = 64 << 10
    /// Envelopes up to this size are inspected on the request's task; larger ones on a thread of the
    /// inspection pool. Parsing costs up to ~2 µs of CPU a byte (`[{},{},…]`): a cooperative thread
    /// must not spend more than a few milliseconds of it.
    static let maxInlineBytes = 4 << 10

    static var blobExtension: String { "envelope" }

    static let droppedTypes: Set<String> = [
        "transaction", "span", "profile", "profile_chunk", "replay_event", "replay_recording",
        "replay_video", "check_in", "statsd", "metric_buckets", "user_report", "feedback", "otel_log",
    ]

    /// Small envelopes are read right here; larger ones on a thread (decoding JSON blocks).
    func inspect(_ body: ReceivedBody, for upload: UploadAdmission.Admitted, receivedAt: Date) async throws
        -> FormatInspection
    {
        let project = upload.key.projectID
        try inspectionMemory?.take(body.size, project: project, for: "the envelope")
        defer { inspectionMemory?.giveBack(body.size, project: project) }
        if let bytes = body.bytes, bytes.count <= Self.maxInlineBytes {
            return try inspect(bytes, body: body, upload: upload, receivedAt: receivedAt)
        }
        let format = self
        return try await pool.run(project: project) {
            let bytes = try body.bytes ?? Data(contentsOf: URL(fileURLWithPath: body.path))
            return try format.inspect(bytes, body: body, upload: upload, receivedAt: receivedAt)
        }
    }

    func inspect(_ bytes: Data, body: ReceivedBody, upload: UploadAdmission.Admitted, receivedAt: Date) throws
        -> FormatInspection
    {
        let envelope: SentryEnvelope
        do {
            envelope = try SentryEnvelope(parsing: bytes)
        } catch {
            throw APIError.invalidEnvelope(error.description)
        }
        let sanitizer = FieldSanitizer(maxFieldBytes: limits.maxFieldBytes)
        var reports: [CrashReport] = []
        var encodedReports: [Data?] = []
        var files: [InspectedFile] = []
        var sessions: [SessionSummary] = []
        var losses: [DeliveryLoss] = []
        var dropped: [String: Int] = [:]
        var reportBytes = 0
        var logRecordsLeft = SentryLogs.maxRecordsPerEnvelope
        for (number, item) in envelope.items.enumerated() {
            let payload = item.payload
            func file(_ path: String, _ kind: BundleFile.Kind, lines: Int = 0) -> InspectedFile {
                InspectedFile(
                    path: path, kind: kind, size: Int64(payload.count),
                    sha256: SHA256.hash(data: payload).lowercaseHex, lineCount: lines)
            }
            /// The item as a tree, for `body` only: the budget is charged for the tree while it lives.
            func withJSON<Result>(_ body: (SentryJSON) throws -> Result) throws -> Result {
                let charge = payload.count * ParseCost.jsonTreeBytesPerByte
                try inspectionMemory?.take(charge, project: upload.key.projectID, for: "items/\(number).\(item.type)")
                defer { inspectionMemory?.giveBack(charge, project: upload.key.projectID) }
                let tree: SentryJSON
                do {
                    tree = try SentryJSON.parse(payload)
                } catch {
                    throw APIError.invalidEnvelope("item \(number) (\(item.type)) is not valid JSON")
                }
                return try body(tree)
            }
            switch item.type {
            case "event":
                let path = "items/\(number).event.json"
                let maxBytes = min(limits.maxReportBytes, Self.maxEventItemBytes)
                guard payload.count <= maxBytes else {
                    throw APIError.invalidReport(path, "larger than \(maxBytes) bytes")
                }
                if reportBytes + payload.count > limits.maxReportBytesPerBundle {
                    throw APIError.reportsTooLarge(limit: limits.maxReportBytesPerBundle)
                }
                var report = try withJSON { event in
                    guard event.object != nil else { throw APIError.invalidReport(path, "not a JSON object") }
                    return events.report(event, receivedAt: receivedAt)
                }
                // Cut as the plan would, so that what is encoded here is what is stored.
                ReportBounds.cut(&report)
                let encoded = report.encoded()
                // What is stored is the converted report, so it is what counts (an event of empty
                // frames was once stored at 70 times its size: security review 2026-11-27, finding 6).
                // Checked here too, before the next event is converted; `IngestPlan` checks again.
                let counted = max(payload.count, encoded.count)
                try ReportBounds(limits).check(json: counted, storedBefore: reportBytes, path: path)
                reportBytes += counted
                // A report as encoded is stored as encoded; a sanitized one the plan encodes anew.
                if sanitizer.needsSanitizing(encoded) {
                    reports.append(try sanitizer.resanitized(encoded, decode: CrashReport.decode))
                    encodedReports.append(nil)
                } else {
                    reports.append(report)
                    encodedReports.append(encoded)
                }
                files.append(file(path, .report))
            case "session", "sessions":
                guard payload.count <= Self.maxSessionItemBytes else {
                    dropped[item.type, default: 0] += 1
                    continue
                }
                sessions += try withJSON {
                    SentrySessions.summaries(
                        of: $0, type: item.type, receivedAt: receivedAt,
                        aggregatesCountRuns: envelope.header.sdk?.name == SentryEvent.sdkName)
                }
            case "client_report":
                guard payload.count <= SentryClientReports.maxItemBytes else {
                    dropped[item.type, default: 0] += 1
                    continue
                }
                losses += try withJSON { SentryClientReports.losses(of: $0, appVersion: nil) }
            case "log" where payload.count > SentryLogs.maxItemBytes || logRecordsLeft == 0:
                dropped["log", default: 0] += 1
            case "log":
                let lines = try withJSON { SentryLogs.lines($0, limit: logRecordsLeft) }
                logRecordsLeft -= lines.count
                files.append(file("items/\(number).log", .log, lines: lines.count))
            case "attachment":
                files.append(file("items/\(number)-\(Self.fileName(item.header.filename))", .other))
            default:
                dropped[Self.droppedTypes.contains(item.type) ? item.type : "other", default: 0] += 1
            }
        }
        let eventID = envelope.eventID ?? reports.first.map { $0.id.uuidString.lowercased().filter { $0 != "-" } }
        var new = NewBundle(
            projectID: upload.key.projectID, uploadID: upload.uploadID, sha256: body.sha256, size: Int64(body.size),
            blob: Self.blobName(sha256: body.sha256), manifest: nil, files: files, reports: reports,
            receivedAt: receivedAt)
        new.sessions = sessions
        new.encodedReports = encodedReports
        // A client report names no release: the envelope's event's or session's, else its header's
        // trace context's (what Blackbox's own client reports carry).
        let version =
            reports.first?.app.version ?? sessions.first?.appVersion
            ?? SentryRelease(envelope.header.trace?.release).version
        new.losses = losses.map { loss in
            var loss = loss
            loss.appVersion = version
            return loss
        }
        return FormatInspection(
            plan: try IngestPlan(new, bounds: IngestBounds(limits)), senderID: eventID, droppedItems: dropped)
    }

    /// The envelope an SDK would have sent for one event (what the legacy `store/` endpoint receives).
    static func envelope(ofEvent event: Data) throws -> Data {
        Data(try SentryEnvelope(items: [.init(type: "event", payload: event)]).encoded())
    }

    /// An attachment's name as a file of the bundle: no directories, no control characters, at most
    /// 100 bytes (display only: never a file system path).
    static func fileName(_ name: String?) -> String {
        let base = (name ?? "attachment").split(separator: "/").last.map(String.init) ?? "attachment"
        let clean = String(base.unicodeScalars.filter { $0.value >= 0x20 && $0 != "\\" }.prefix(100))
        return clean.isEmpty || clean == "." || clean == ".." ? "attachment" : clean
    }

    // MARK: reading back

    func extract(
        _ path: String, fromBlobAt blobFile: String, chunkBytes: Int, maxBytes: Int, consumer: (Data) throws -> Void
    ) throws {
        try Self.handOn(item(path, fromBlobAt: blobFile, maxBytes: maxBytes), inChunksOf: chunkBytes, to: consumer)
    }

    func contents(of paths: Set<String>, fromBlobAt blobFile: String, maxBytes: Int) throws
        -> [String: Result<Data, any Error>]
    {
        let envelope = try Self.open(blobFile, maxBytes: maxBytes)
        var results: [String: Result<Data, any Error>] = [:]
        for path in paths {
            results[path] = Result { try Self.item(path, of: envelope, maxBytes: maxBytes) }
        }
        return results
    }

    private func item(_ path: String, fromBlobAt blobFile: String, maxBytes: Int) throws -> Data {
        try Self.item(path, of: try Self.open(blobFile, maxBytes: maxBytes), maxBytes: maxBytes)
    }

    /// The item a file name stands for: its payload, or for a log its lines as text.
    private static func item(_ path: String, of envelope: SentryEnvelope, maxBytes: Int) throws -> Data {
        guard path.hasPrefix("items/"),
            let number = Int(path.dropFirst("items/".count).prefix { $0.isNumber }),
            envelope.items.indices.contains(number)
        else { throw BundleReader.Failure.missing(path) }
        let item = envelope.items[number]
        let payload = item.payload
        let data: Data
        if item.type == "log", path.hasSuffix(".log"), let records = try? SentryJSON.parse(payload) {
            data = Data((SentryLogs.lines(records).joined(separator: "\n") + "\n").utf8)
        } else {
            data = Data(payload)
        }
        if data.count > maxBytes { throw BundleReader.Failure.tooLarge(path) }
        return data
    }

    private static func open(_ blobFile: String, maxBytes: Int) throws -> SentryEnvelope {
        guard let bytes = try? Data(contentsOf: URL(fileURLWithPath: blobFile)) else {
            throw BundleReader.Failure.unreadable(blobFile)
        }
        guard let envelope = try? SentryEnvelope(parsing: bytes) else {
            throw BundleReader.Failure.unreadable(blobFile)
        }
        return envelope
    }
}
