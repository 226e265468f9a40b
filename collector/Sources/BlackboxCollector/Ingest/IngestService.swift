import BlackboxFormat
import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import NIOPosix
import Synchronization

/// `POST /api/v1/bundles`, as named stages: admission (key, slots, quota, length, disk:
/// `UploadAdmission`), reception (a temporary file and its sha256: `BodyReceiver`), the format's
/// inspection into a plan (`ZipBundleFormat`), then the group commit (durable blob, one transaction)
/// before the acknowledgement. Idempotent by `Upload-Id` and by sha256: a repeat answers 200 with the
/// stored bundle and stores nothing. Another upload format is another `BundleFormat` behind the same
/// stages.
struct IngestService: Sendable {
    let store: any CollectorStore
    let admission: UploadAdmission
    let receiver: BodyReceiver
    let format: any BundleFormat
    let committer: GroupCommitter
    let metrics: CollectorMetrics
    let indexerWakeup: @Sendable () -> Void
    /// Reports whose frames lack debug-info names wait for the symbolication service.
    let symbolicationWakeup: @Sendable () -> Void
    /// Occurrences may have queued alerts (`AlertRules`).
    let alertsWakeup: @Sendable () -> Void
    /// Called with `true` as an upload starts and `false` as it ends: background work (the log
    /// indexer) steps back while uploads are being received.
    let uploadActivity: @Sendable (_ started: Bool) -> Void
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

    func receive(_ request: Request, context: CollectorContext) async throws -> Response {
        let started = ContinuousClock.now
        uploadActivity(true)
        defer { uploadActivity(false) }
        do {
            let (acknowledgement, bytes) = try await admission.admit(
                request, secret: AdminAuthentication.bearer(request)
            ) { upload in try await ingest(request, upload) }
            metrics.accepted(bytes: bytes, duplicate: acknowledgement.duplicate, latency: ContinuousClock.now - started)
            return try JSONResponse.make(acknowledgement, status: acknowledgement.duplicate ? .ok : .created)
        } catch let rejection as APIError {
            metrics.rejected(reason: rejection.code)
            logger.notice("upload refused: \(rejection)")
            throw rejection
        }
    }

    private func ingest(_ request: Request, _ upload: UploadAdmission.Admitted) async throws -> (Acknowledgement, Int) {
        if let uploadID = upload.uploadID,
            let existing = try await store.existingBundle(
                projectID: upload.key.projectID, uploadID: uploadID, sha256: "")
        {
            return (Self.acknowledge(existing, duplicate: true), 0)
        }
        let body = try await receiver.receive(request)
        var handedOn = false
        defer { if !handedOn { unlink(body.path) } }
        // The same bytes under another Upload-Id are found by the index transaction itself.
        let plan = try await format.plan(body, for: upload, receivedAt: Date())
        handedOn = true
        let outcome = try await commit(plan, body: body, uploadID: upload.uploadID)
        return (
            Self.acknowledge(outcome.record, duplicate: { if case .duplicate = outcome { true } else { false } }()),
            body.size
        )
    }

    /// The last stage, for every format: from here the committer owns the body's temporary file (it
    /// makes it durable with the others of its batch, then indexes them all in one transaction); then
    /// the background services that the new bundle gives work are woken.
    func commit(_ plan: IngestPlan, body: ReceivedBody, uploadID: String?) async throws -> IndexOutcome {
        if plan.implausibleSessionSummaries > 0 {
            metrics.rejected(reason: "implausible_sessions")
            logger.notice(
                "upload \(uploadID ?? "without an id"): \(plan.implausibleSessionSummaries) session summaries dropped as impossible for one installation"
            )
        }
        let outcome = try await committer.submit(plan, temporaryPath: body.path)
        if case .stored(let record) = outcome {
            if plan.files.contains(where: { $0.kind == .log }) { indexerWakeup() }
            if plan.occurrences.contains(where: \.needsSymbolication) { symbolicationWakeup() }
            if !plan.occurrences.isEmpty { alertsWakeup() }
            logger.info(
                "stored bundle \(record.id): \(body.size) bytes, \(plan.files.count) files, \(plan.bundle.reportCount) reports"
            )
        }
        return outcome
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
                maxBodyBytes: admission.limits.maxBodyBytes
            ),
            status: .ok)
    }

    private func authenticate(_ request: Request) async throws -> APIKey {
        guard let secret = AdminAuthentication.bearer(request) else { throw APIError.missingKey() }
        guard let key = try await admission.keys.authenticate(secret) else { throw APIError.invalidKey() }
        return key
    }

    static func acknowledge(_ record: BundleRecord, duplicate: Bool) -> Acknowledgement {
        Acknowledgement(
            bundleID: record.id, uploadID: record.uploadID, sha256: record.sha256, size: record.size,
            files: record.fileCount, reports: record.reportCount, duplicate: duplicate)
    }
}
