import Foundation
import Hummingbird
import Logging

/// `POST /api/v1/bundles`: Blackbox's zip bundles through the shared stages (`IngestService`), answered
/// with the stored bundle once it is durable. Idempotent by `Upload-Id` and by sha256: a repeat
/// answers 200 with the stored bundle and stores nothing. `GET /api/v1/key` lets a client check its
/// key without uploading.
struct BundleEndpoint: IngestEndpoint {
    let ingest: IngestService
    let format: ZipBundleFormat
    let logger = Logger(label: "collector.ingest")

    struct Acknowledgement: ResponseEncodable {
        var bundleID: Int64
        var uploadID: String?
        var sha256: String
        var size: Int64
        var files: Int
        var reports: Int
        var duplicate: Bool
    }

    func register(on router: Router<CollectorContext>) {
        router.post("api/v1/bundles") { request, context in try await receive(request, context: context) }
        router.get("api/v1/key") { request, _ in try await describeKey(request) }
    }

    func receive(_ request: Request, context: CollectorContext) async throws -> Response {
        let started = ContinuousClock.now
        let metrics = ingest.metrics
        ingest.uploadActivity(true)
        defer { ingest.uploadActivity(false) }
        do {
            let (acknowledgement, bytes) = try await ingest.admission.admit(
                request, secret: AdminAuthentication.bearer(request)
            ) { upload in try await receive(request, upload) }
            metrics.accepted(bytes: bytes, duplicate: acknowledgement.duplicate, latency: ContinuousClock.now - started)
            return try JSONResponse.make(acknowledgement, status: acknowledgement.duplicate ? .ok : .created)
        } catch let rejection as APIError {
            metrics.rejected(reason: rejection.code)
            logger.notice("upload refused: \(rejection)")
            throw rejection
        }
    }

    private func receive(_ request: Request, _ upload: UploadAdmission.Admitted) async throws -> (Acknowledgement, Int)
    {
        if let uploadID = upload.uploadID,
            let existing = try await ingest.store.existingBundle(
                projectID: upload.key.projectID, uploadID: uploadID, sha256: "")
        {
            return (Self.acknowledge(existing, duplicate: true), 0)
        }
        let body = try await ingest.receiver.receive(request)
        var handedOn = false
        defer { if !handedOn { unlink(body.path) } }
        // The same bytes under another Upload-Id are found by the index transaction itself.
        let inspection = try await format.inspect(body, for: upload, receivedAt: Date())
        handedOn = true
        let outcome = try await ingest.commit(inspection, body: body, uploadID: upload.uploadID)
        return (
            Self.acknowledge(outcome.record, duplicate: { if case .duplicate = outcome { true } else { false } }()),
            body.size
        )
    }

    /// `GET /api/v1/key`: lets a client (`blackbox doctor`) check its key without uploading, and
    /// learn the body size limit.
    func describeKey(_ request: Request) async throws -> Response {
        struct KeyDescription: Encodable {
            var projectID: Int64
            var kind: String
            var prefix: String
            var maxBodyBytes: Int
        }
        let key: APIKey
        do {
            key = try await authenticate(request)
        } catch let error as APIError {
            throw error
        } catch {
            throw APIError.storageUnavailable(error)
        }
        return try JSONResponse.make(
            KeyDescription(
                projectID: key.projectID, kind: key.kind.rawValue, prefix: key.prefix,
                maxBodyBytes: ingest.admission.limits.maxBodyBytes
            ),
            status: .ok)
    }

    private func authenticate(_ request: Request) async throws -> APIKey {
        guard let secret = AdminAuthentication.bearer(request) else { throw APIError.missingKey() }
        guard let key = try await ingest.admission.keys.authenticate(secret) else { throw APIError.invalidKey() }
        return key
    }

    static func acknowledge(_ record: BundleRecord, duplicate: Bool) -> Acknowledgement {
        Acknowledgement(
            bundleID: record.id, uploadID: record.uploadID, sha256: record.sha256, size: record.size,
            files: record.fileCount, reports: record.reportCount, duplicate: duplicate)
    }
}
