import BlackboxFormat
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
struct SentryIngestService: Sendable {
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
            let (eventID, bytes) = try await ingest.admission.admit(request, secret: SentryAuthentication.key(request))
            { upload in
                guard upload.key.projectID == projectID else { throw APIError.projectMismatch(projectID) }
                return try await receive(request, upload: upload, coding: coding, legacyStore: legacyStore)
            }
            metrics.accepted(bytes: bytes, duplicate: false, latency: ContinuousClock.now - started)
            return try JSONResponse.make(Answer(id: eventID), status: .ok)
        } catch let refusal as APIError {
            metrics.rejected(reason: refusal.code)
            logger.notice("Sentry upload refused: \(refusal)")
            throw SentryRefusal(refusal)
        }
    }

    private func receive(
        _ request: Request, upload: UploadAdmission.Admitted, coding: ContentCoding?, legacyStore: Bool
    ) async throws -> (String?, Int) {
        let decoder: (any BodyDecoder)?
        do {
            decoder = try coding?.makeDecoder()
        } catch {
            throw APIError.corruptEncoding("\(error)")
        }
        var body = try await ingest.receiver.receive(
            request, decoding: decoder,
            maxDecodedBytes: legacyStore ? ingest.admission.limits.maxReportBytes : format.maxEnvelopeBytes)
        var handedOn = false
        defer { if !handedOn { unlink(body.path) } }
        if legacyStore {
            // One event as JSON: stored as the envelope an SDK would have sent for it.
            let event = try body.bytes ?? Data(contentsOf: URL(fileURLWithPath: body.path))
            let envelope = SentryEnvelopeFormat.envelope(ofEvent: event)
            unlink(body.path)
            body = try ingest.receiver.receive(envelope)
        }
        let inspection = try await format.inspect(body, for: upload, receivedAt: Date())
        ingest.metrics.droppedSentryItems(inspection.dropped)
        handedOn = true
        _ = try await ingest.commit(inspection.plan, body: body, uploadID: upload.uploadID)
        return (inspection.eventID, body.size)
    }
}

/// A refusal as a Sentry SDK understands it: load and quota refusals become 429 with `Retry-After`
/// and `X-Sentry-Rate-Limits: <seconds>::organization:<reason>` (every category; the SDK stops sending
/// for that long), the others keep their status. The body is Relay's shape, `{"detail": "…"}`.
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

    private struct Body: Encodable {
        var detail: String
        var error: String
    }

    func response(from request: Request, context: some RequestContext) throws -> Response {
        let data = try JSONResponse.encoder.encode(Body(detail: refusal.message, error: refusal.code))
        var headers: HTTPFields = [.contentType: "application/json; charset=utf-8"]
        if let retryAfter {
            headers[.retryAfter] = String(retryAfter)
            headers[.init("X-Sentry-Rate-Limits")!] = "\(retryAfter)::organization:\(refusal.code)"
        }
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }
}
