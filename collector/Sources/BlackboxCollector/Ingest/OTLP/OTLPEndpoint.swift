import BlackboxOTLP
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore

/// `POST /v1/logs`: OTLP/HTTP logs, as OpenTelemetry SDKs and swift-otel export them (protobuf or
/// JSON, gzip or not), through the same stages as every upload (admission with the project's ingest
/// key, the body received and decoded within the same limits, `OTLPLogsFormat`, the group commit).
/// The key comes as `Authorization: Bearer <key>` or, for an SDK configured with a Sentry DSN, as the
/// DSN's public key (`X-Sentry-Auth`); `/otlp/v1/logs` (Loki's path) and
/// `/api/<project>/integration/otlp/v1/logs` (Sentry's, which also checks the project) are the same.
///
/// The answer is OTLP's `ExportLogsServiceResponse` in the request's encoding, with `partialSuccess`
/// when records were refused; a request whose every record was refused stores nothing.
struct OTLPEndpoint: IngestEndpoint {
    let ingest: IngestService
    let format: OTLPLogsFormat
    let logger = Logger(label: "collector.otlp")

    func register(on router: Router<CollectorContext>) {
        router.post("v1/logs") { request, _ in try await receive(request, project: nil) }
        router.post("otlp/v1/logs") { request, _ in try await receive(request, project: nil) }
        router.post("api/:project/integration/otlp/v1/logs") { request, context in
            guard let project = context.parameters.get("project").flatMap(Int64.init) else {
                throw OTLPRefusal(
                    APIError.invalidID(), encoding: OTLPEncoding(contentType: request.headers[.contentType]))
            }
            return try await receive(request, project: project)
        }
    }

    func receive(_ request: Request, project: Int64?) async throws -> Response {
        let started = ContinuousClock.now
        let metrics = ingest.metrics
        let encoding = OTLPEncoding(contentType: request.headers[.contentType])
        ingest.uploadActivity(true)
        defer { ingest.uploadActivity(false) }
        do {
            guard let encoding else {
                throw APIError.unsupportedContentType(
                    request.headers[.contentType], accepted: ["application/x-protobuf", "application/json"])
            }
            let coding = try ContentCoding.of(
                request.headers[.contentEncoding], accepted: [.identity, .gzip, .deflate])
            let secret = AdminAuthentication.bearer(request) ?? SentryAuthentication.key(request)
            let (records, bytes) = try await ingest.admission.admit(request, secret: secret) { upload in
                if let project, upload.key.projectID != project { throw APIError.projectMismatch(project) }
                let body = try await receiveBody(request, coding: coding, encoding: encoding)
                return try await store(body, encoding: encoding, upload: upload)
            }
            metrics.accepted(bytes: bytes, duplicate: false, latency: ContinuousClock.now - started)
            if records.rejected > 0 {
                logger.notice("OTLP request: \(records.rejected) records refused: \(records.reason ?? "")")
            }
            let answer = OTLPLogsResponse(rejected: records.rejected, reason: records.reason)
            return Response(
                status: .ok, headers: [.contentType: encoding.contentType],
                body: .init(byteBuffer: ByteBuffer(bytes: try answer.encoded(encoding))))
        } catch let refusal as APIError {
            metrics.rejected(reason: refusal.code)
            logger.notice("OTLP request refused: \(refusal)")
            throw OTLPRefusal(refusal, encoding: encoding)
        }
    }

    /// The body, decoded as it arrives, into a temporary file (the caller removes it unless stored).
    private func receiveBody(_ request: Request, coding: ContentCoding?, encoding: OTLPEncoding) async throws
        -> ReceivedBody
    {
        return try await ingest.receiver.receive(
            request, decoding: try coding?.makeDecoder(),
            maxDecodedBytes: encoding == .json ? format.maxJSONRequestBytes : format.maxRequestBytes)
    }

    /// A JSON request is read here and stored as the same request in protobuf (the one form a stored
    /// blob has); then the format's inspection and the shared commit. The body's file is handed on or
    /// removed.
    private func store(_ received: ReceivedBody, encoding: OTLPEncoding, upload: UploadAdmission.Admitted)
        async throws -> (FormatInspection.RecordCounts, Int)
    {
        var body = received
        var handedOn = false
        defer { if !handedOn { unlink(body.path) } }
        if encoding == .json {
            let protobuf = try await protobuf(ofJSON: body, project: upload.key.projectID)
            unlink(body.path)
            body = try ingest.receiver.receive(protobuf)
        }
        let inspection = try await format.inspect(body, for: upload, receivedAt: Date())
        let records = inspection.records ?? .init(accepted: 0, rejected: 0)
        guard records.accepted > 0 else { return (records, received.size) }
        handedOn = true
        _ = try await ingest.commit(inspection, body: body, uploadID: upload.uploadID)
        return (records, received.size)
    }
}

extension OTLPEndpoint {
    /// A JSON request decoded whole and encoded again in protobuf, its model charged to the
    /// inspection budget while it lives (on the inspection pool when large, as every format's parse).
    fileprivate func protobuf(ofJSON body: ReceivedBody, project: Int64) async throws -> Data {
        let charge = body.size * ParseCost.protobufModelBytesPerByte
        try format.inspectionMemory?.take(charge, project: project, for: "the OTLP request")
        defer { format.inspectionMemory?.giveBack(charge, project: project) }
        @Sendable func convert() throws -> Data {
            let json = try body.bytes ?? Data(contentsOf: URL(fileURLWithPath: body.path))
            do {
                return try OTLPLogsRequest(otlp: json, encoding: .json).encoded(.protobuf)
            } catch let error as OTLPDecodingError {
                throw APIError.invalidOTLP(error.description)
            }
        }
        if body.size <= OTLPLogsFormat.maxInlineBytes { return try convert() }
        return try await format.pool.run(project: project) { try convert() }
    }
}

/// A refusal as OTLP/HTTP answers it: its status (429 and 503 with `Retry-After`, which exporters
/// retry), and a `google.rpc.Status` with the message in the request's encoding (protobuf when the
/// request's was not one of OTLP's).
struct OTLPRefusal: HTTPResponseError {
    let refusal: APIError
    let encoding: OTLPEncoding

    init(_ refusal: APIError, encoding: OTLPEncoding?) {
        self.refusal = refusal
        self.encoding = encoding ?? .protobuf
    }

    var status: HTTPResponse.Status { refusal.status }

    func response(from request: Request, context: some RequestContext) throws -> Response {
        var answer = OTLPStatus()
        answer.code = Int32(refusal.status.code)
        answer.message = "\(refusal.code): \(refusal.message)"
        let bytes = try answer.encoded(encoding)
        var headers: HTTPFields = [.contentType: encoding.contentType]
        if let retryAfter = refusal.retryAfter { headers[.retryAfter] = String(retryAfter) }
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: bytes)))
    }
}
