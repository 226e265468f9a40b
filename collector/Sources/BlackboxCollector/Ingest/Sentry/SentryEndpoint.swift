import BlackboxFormat
import BlackboxSentry
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore

/// `POST /api/<project id>/envelope/` and the legacy `POST /api/<project id>/store/` (one event as
/// JSON): the Sentry protocol through the same stages as Blackbox's bundles (admission with the
/// project's ingest key as the SDK's public key, the body received and decoded within the same
/// limits, `SentryEnvelopeFormat`, the group commit), answered `{"id": "<event id>"}`.
///
/// Refusals an SDK should retry later (slots, memory, quota, disk) are answered 429 with
/// `Retry-After` and `X-Sentry-Rate-Limits`, which every Sentry SDK honours; the rest keep their 4xx.
/// The rate limits leave out client reports, and a small envelope of client reports alone passes a
/// full quota: an SDK counts what the limits made it drop and says so (`/api/v1/losses`).
struct SentryEndpoint: IngestEndpoint {
    let ingest: IngestService
    let format: SentryEnvelopeFormat
    let logger = Logger(label: "collector.sentry")

    func register(on router: Router<CollectorContext>) {
        router.post("api/:project/envelope") { request, context in
            try await receive(request, context: context, legacyStore: false)
        }
        router.post("api/:project/store") { request, context in
            try await receive(request, context: context, legacyStore: true)
        }
    }

    private struct Answer: ResponseEncodable {
        var id: String?
    }

    func receive(_ request: Request, context: CollectorContext, legacyStore: Bool) async throws -> Response {
        let started = ContinuousClock.now
        let metrics = ingest.metrics
        ingest.uploadActivity(true)
        defer { ingest.uploadActivity(false) }
        do {
            guard let projectID = context.parameters.get("project").flatMap(Int64.init) else {
                throw APIError.invalidID()
            }
            let coding = try ContentCoding.of(
                request.headers[.contentEncoding], accepted: [.identity, .gzip, .deflate, .br])
            let (eventID, bytes): (String?, Int)
            if let key = SentryAuthentication.key(request) {
                (eventID, bytes) = try await ingest.admission.admit(
                    request, secret: key, pastQuota: legacyStore ? nil : Self.maxLossesOnlyBytes
                ) { upload in
                    guard upload.key.projectID == projectID else { throw APIError.projectMismatch(projectID) }
                    let body: ReceivedBody
                    do {
                        body = try await receiveBody(
                            request, coding: coding, legacyStore: legacyStore, overQuota: upload.overQuota)
                    } catch is APIError where upload.overQuota {
                        // Past what a body of client reports alone can be: the quota's refusal.
                        throw ingest.admission.refusedOverQuota()
                    }
                    return try await store(body, upload: upload, legacyStore: legacyStore)
                }
            } else if !legacyStore {
                (eventID, bytes) = try await receiveAuthenticatedByDSN(request, coding: coding, projectID: projectID)
            } else {
                throw APIError.missingKey()
            }
            metrics.accepted(bytes: bytes, duplicate: false, latency: ContinuousClock.now - started)
            return try JSONResponse.make(Answer(id: eventID), status: .ok)
        } catch let refusal as APIError {
            metrics.rejected(reason: refusal.code)
            logger.notice("Sentry upload refused: \(refusal)")
            throw SentryRefusal(refusal)
        }
    }

    /// The body, decoded as it arrives, into a temporary file (the caller removes it unless stored).
    private func receiveBody(
        _ request: Request, coding: ContentCoding?, legacyStore: Bool, overQuota: Bool = false,
        firstLineCheck: ((Data) async throws -> Void)? = nil
    ) async throws -> ReceivedBody {
        let maxDecodedBytes =
            overQuota
            ? Self.maxLossesOnlyBytes : legacyStore ? ingest.admission.limits.maxReportBytes : format.maxEnvelopeBytes
        return try await ingest.receiver.receive(
            request, decoding: try coding?.makeDecoder(), maxDecodedBytes: maxDecodedBytes,
            firstLineCheck: firstLineCheck, maxFirstLineBytes: SentryEnvelope.maxHeaderBytes)
    }

    /// An envelope whose header's `dsn` is its only credential (relays, browser tunnels): the body is
    /// read in the upload slots of no project (so such uploads share one project's share of slots),
    /// its key checked as soon as its header line has arrived and the disk's free space before that,
    /// then admitted with the DSN's key like any other.
    private func receiveAuthenticatedByDSN(_ request: Request, coding: ContentCoding?, projectID: Int64) async throws
        -> (String?, Int)
    {
        let admission = ingest.admission
        do {
            try admission.slots.enter(
                project: Self.unauthenticated, limit: admission.limits.maxConcurrentUploads,
                perProject: admission.limits.maxConcurrentUploadsPerProject)
        } catch {
            throw APIError.uploadSlots(
                error, limit: admission.limits.maxConcurrentUploads,
                perProject: admission.limits.maxConcurrentUploadsPerProject)
        }
        var body: ReceivedBody
        do {
            defer { admission.slots.leave(project: Self.unauthenticated) }
            if let available = admission.blobs.availableBytes(),
                available < admission.limits.minFreeBytes + Int64(format.maxEnvelopeBytes)
            {
                throw APIError.insufficientStorage(available: available)
            }
            body = try await receiveBody(request, coding: coding, legacyStore: false) { header in
                let key = try Self.dsnKey(inHeader: header, projectID: projectID)
                guard let found = try await admission.keys.authenticate(key) else { throw APIError.invalidKey() }
                guard found.kind != .symbols else { throw APIError.forbidden() }
                guard found.projectID == projectID else { throw APIError.projectMismatch(projectID) }
            }
        }
        var handedOn = false
        defer { if !handedOn { unlink(body.path) } }
        let bytes = try body.bytes ?? Self.firstLine(of: body.path)
        let key = try Self.dsnKey(
            inHeader: bytes.firstIndex(of: 0x0A).map { bytes[..<$0] } ?? bytes[...], projectID: projectID)
        return try await admission.admit(request, secret: key, pastQuota: Self.maxLossesOnlyBytes) { upload in
            guard upload.key.projectID == projectID else { throw APIError.projectMismatch(projectID) }
            guard !upload.overQuota || body.size <= Self.maxLossesOnlyBytes else {
                throw admission.refusedOverQuota()
            }
            handedOn = true
            return try await store(body, upload: upload, legacyStore: false)
        }
    }

    /// The public key of the `dsn` in an envelope's header line, for the project of the route.
    private static func dsnKey(inHeader header: Data, projectID: Int64) throws -> String {
        guard let text = SentryEnvelope.header(ofFirstLine: Data(header))?.dsn, let dsn = try? SentryDSN(text) else {
            throw APIError.missingKey()
        }
        guard dsn.numericProjectID == projectID else { throw APIError.projectMismatch(projectID) }
        return dsn.publicKey
    }

    /// An envelope this small (as sent and decoded) passes a full quota if it holds client reports
    /// and nothing else: sentry-python's are ~300 bytes.
    static let maxLossesOnlyBytes = 16 << 10

    /// The slots' name for uploads not yet authenticated (no project has a negative id).
    static let unauthenticated: Int64 = -1

    /// The start of a received file, up to a header line's limit.
    private static func firstLine(of path: String) throws -> Data {
        guard let handle = FileHandle(forReadingAtPath: path) else { throw APIError.missingKey() }
        defer { try? handle.close() }
        return try handle.read(upToCount: SentryEnvelope.maxHeaderBytes + 1) ?? Data()
    }

    /// The format's inspection, then the shared commit; the body's file is handed on or removed.
    private func store(_ received: ReceivedBody, upload: UploadAdmission.Admitted, legacyStore: Bool) async throws
        -> (String?, Int)
    {
        var body = received
        var handedOn = false
        defer { if !handedOn { unlink(body.path) } }
        if legacyStore {
            // One event as JSON: stored as the envelope an SDK would have sent for it.
            let event = try body.bytes ?? Data(contentsOf: URL(fileURLWithPath: body.path))
            let envelope = try SentryEnvelopeFormat.envelope(ofEvent: event)
            unlink(body.path)
            body = try ingest.receiver.receive(envelope)
        }
        let inspection = try await format.inspect(body, for: upload, receivedAt: Date())
        if upload.overQuota, !inspection.holdsLossesOnly { throw ingest.admission.refusedOverQuota() }
        handedOn = true
        _ = try await ingest.commit(inspection, body: body, uploadID: upload.uploadID)
        return (inspection.senderID, body.size)
    }
}

/// A refusal as a Sentry SDK understands it: load and quota refusals become 429 with `Retry-After`
/// and `X-Sentry-Rate-Limits: <seconds>:<categories>:organization:<reason>` (the SDK stops sending
/// those for that long), the others keep their status. The body is Relay's shape, `{"detail": "…"}`.
///
/// The categories are every one Sentry's SDKs send but `internal`, their client reports: a limit of
/// every category (an empty list) made sentry-python hold back the very report that counts what
/// the limit made it drop. An SDK that sends a category not listed is refused again, with the same
/// answer.
struct SentryRefusal: HTTPResponseError {
    let refusal: APIError

    init(_ refusal: APIError) { self.refusal = refusal }

    var retryAfter: Int? {
        switch refusal.code {
        case "too_many_uploads", "too_many_project_uploads", "insufficient_storage": refusal.retryAfter ?? 60
        case "quota_exceeded": 3_600
        default: nil
        }
    }

    var status: HTTPResponse.Status { retryAfter != nil ? .tooManyRequests : refusal.status }

    /// Sentry's data categories (Relay's `DataCategory`), less `internal`.
    static let limitedCategories = [
        "default", "error", "transaction", "security", "attachment", "session", "profile", "profile_chunk",
        "replay", "monitor", "span", "log_item", "log_byte", "feedback", "user_report_v2", "metric_bucket",
        "statsd", "trace_metric",
    ].joined(separator: ";")

    private struct Body: Encodable {
        var detail: String
        var error: String
    }

    func response(from request: Request, context: some RequestContext) throws -> Response {
        let data = try JSONResponse.encoder.encode(Body(detail: refusal.message, error: refusal.code))
        var headers: HTTPFields = [.contentType: "application/json; charset=utf-8"]
        if let retryAfter {
            headers[.retryAfter] = String(retryAfter)
            headers[.init("X-Sentry-Rate-Limits")!] =
                "\(retryAfter):\(Self.limitedCategories):organization:\(refusal.code)"
        }
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }
}
