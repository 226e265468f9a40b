import BlackboxFormat
import BlackboxOTLP
import Crypto
import Foundation

/// OTLP/HTTP's logs request as an upload format: the request in protobuf is the stored blob (a JSON
/// request is stored as the same request in protobuf: `OTLPEndpoint`), its records one log file of
/// the bundle, `logs.log`, indexed for search (`OTLPLogLines`).
struct OTLPLogsFormat: BundleFormat {
    let limits: IngestLimits
    /// Requests held in memory by inspections running now (shared with the other formats' budget).
    let inspectionMemory: MemoryBudget?
    var pool = InspectionPool.shared

    static var blobExtension: String { "otlp" }
    static let logPath = "logs.log"

    /// A request's decoded bytes, in protobuf. Exporters send batches of 512 records (a few hundred
    /// KiB); an OpenTelemetry Collector's batches of 8,192 a few MiB.
    var maxRequestBytes: Int { min(limits.maxReportBytesPerBundle, 8 << 20) }
    /// A request in JSON is decoded whole (SwiftProtobuf's JSON decoder), at up to
    /// `ParseCost.protobufModelBytesPerByte` times its bytes: a smaller bound.
    var maxJSONRequestBytes: Int { min(maxRequestBytes, 1 << 20) }
    /// Requests up to this size are read on the request's task; larger ones on the inspection pool
    /// (as `SentryEnvelopeFormat` does).
    static let maxInlineBytes = 4 << 10

    /// What reading a protobuf request holds at most, from its census (`OTLPLogRecords.census`,
    /// which decodes nothing): its bytes and the lines made of them (up to 3 bytes a byte, ids in
    /// hex), about 96 bytes of line per record even when empty, and the model of one resource, one
    /// scope and one record at a time.
    static func inspectionCharge(bytes: Int, census: OTLPLogRecords.Census) -> Int {
        let largest = [census.largestResource, census.largestScope, census.largestRecord].map {
            min($0, OTLPLogLines.maxRecordBytes)
        }
        return bytes * 4 + min(census.records, OTLPLogLines.maxRecordsPerRequest) * 96 + largest.reduce(0, +)
            * ParseCost.protobufModelBytesPerByte
    }

    func inspect(_ body: ReceivedBody, for upload: UploadAdmission.Admitted, receivedAt: Date) async throws
        -> FormatInspection
    {
        let project = upload.key.projectID
        if let bytes = body.bytes, bytes.count <= Self.maxInlineBytes {
            return try inspect(bytes, body: body, upload: upload, receivedAt: receivedAt)
        }
        let format = self
        return try await pool.run(project: project) {
            let bytes = try body.bytes ?? Data(contentsOf: URL(fileURLWithPath: body.path))
            return try format.inspect(bytes, body: body, upload: upload, receivedAt: receivedAt)
        }
    }

    private func inspect(_ bytes: Data, body: ReceivedBody, upload: UploadAdmission.Admitted, receivedAt: Date)
        throws -> FormatInspection
    {
        let project = upload.key.projectID
        let rendered: OTLPLogLines.Rendered
        do {
            let census = try OTLPLogRecords(protobuf: bytes, maxPartBytes: OTLPLogLines.maxRecordBytes).census()
            let charge = Self.inspectionCharge(bytes: bytes.count, census: census)
            try inspectionMemory?.take(charge, project: project, for: "the OTLP request")
            defer { inspectionMemory?.giveBack(charge, project: project) }
            rendered = try OTLPLogLines.lines(ofProtobuf: bytes)
        } catch let refusal as APIError {
            throw refusal
        } catch {
            throw APIError.invalidOTLP("\(error)")
        }
        let text = Data(Self.text(rendered.lines).utf8)
        let file = InspectedFile(
            path: Self.logPath, kind: .log, size: Int64(text.count), sha256: SHA256.hash(data: text).lowercaseHex,
            lineCount: rendered.lines.count)
        let new = NewBundle(
            projectID: upload.key.projectID, uploadID: upload.uploadID, sha256: body.sha256, size: Int64(body.size),
            blob: Self.blobName(sha256: body.sha256), manifest: nil, files: [file], reports: [],
            receivedAt: receivedAt)
        return FormatInspection(
            plan: try IngestPlan(new, bounds: IngestBounds(limits)),
            records: .init(accepted: rendered.lines.count, rejected: rendered.rejected, reason: rendered.reason))
    }

    private static func text(_ lines: [String]) -> String { lines.isEmpty ? "" : lines.joined(separator: "\n") + "\n" }

    // MARK: reading back

    func extract(
        _ path: String, fromBlobAt blobFile: String, chunkBytes: Int, maxBytes: Int, consumer: (Data) throws -> Void
    ) throws {
        try Self.handOn(logFile(path, fromBlobAt: blobFile, maxBytes: maxBytes), inChunksOf: chunkBytes, to: consumer)
    }

    func contents(of paths: Set<String>, fromBlobAt blobFile: String, maxBytes: Int) throws
        -> [String: Result<Data, any Error>]
    {
        var results: [String: Result<Data, any Error>] = [:]
        for path in paths {
            results[path] = Result { try logFile(path, fromBlobAt: blobFile, maxBytes: maxBytes) }
        }
        return results
    }

    /// The request's records as the log file the inspection counted (the same rule: `OTLPLogLines`).
    private func logFile(_ path: String, fromBlobAt blobFile: String, maxBytes: Int) throws -> Data {
        guard path == Self.logPath else { throw BundleReader.Failure.missing(path) }
        guard let bytes = try? Data(contentsOf: URL(fileURLWithPath: blobFile)),
            let rendered = try? OTLPLogLines.lines(ofProtobuf: bytes)
        else { throw BundleReader.Failure.unreadable(blobFile) }
        let data = Data(Self.text(rendered.lines).utf8)
        if data.count > maxBytes { throw BundleReader.Failure.tooLarge(path) }
        return data
    }
}
