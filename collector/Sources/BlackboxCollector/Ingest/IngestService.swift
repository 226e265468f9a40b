import BlackboxFormat
import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import NIOPosix
import Synchronization

/// `POST /api/v1/bundles`: authenticate, stream the body to a temporary file (hashing as it goes),
/// validate the zip, make it durable, index it in a group commit, then acknowledge. Idempotent by
/// `Upload-Id` and by sha256: a repeat answers 200 with the stored bundle and stores nothing.
struct IngestService: Sendable {
    let store: any CollectorStore
    let blobs: BlobStore
    let limits: IngestLimits
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
    let keys: KeyCache
    /// Uploads being received now, for `maxConcurrentUploads` and `maxConcurrentUploadsPerProject`.
    let inFlight = UploadSlots()
    /// Each project's stored bundle bytes, read at most once a second per project.
    let usage: ProjectUsage
    /// Manifests and reports held in memory by inspections running now.
    let inspectionMemory: MemoryBudget
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
            let (acknowledgement, bytes) = try await ingest(request, context: context)
            metrics.accepted(bytes: bytes, duplicate: acknowledgement.duplicate, latency: ContinuousClock.now - started)
            return try JSONResponse.make(acknowledgement, status: acknowledgement.duplicate ? .ok : .created)
        } catch let rejection as APIError {
            metrics.rejected(reason: rejection.code)
            logger.notice("upload refused: \(rejection)")
            throw rejection
        }
    }

    private func ingest(_ request: Request, context: CollectorContext) async throws -> (Acknowledgement, Int) {
        let key = try await authenticate(request)
        // A symbols key lives on build machines; it archives symbols and nothing else.
        guard key.kind != .symbols else { throw APIError.forbidden() }
        do {
            try inFlight.enter(
                project: key.projectID, limit: limits.maxConcurrentUploads,
                perProject: limits.maxConcurrentUploadsPerProject)
        } catch {
            throw APIError.uploadSlots(
                error, limit: limits.maxConcurrentUploads, perProject: limits.maxConcurrentUploadsPerProject)
        }
        defer { inFlight.leave(project: key.projectID) }
        if try await usage.bundleBytes(of: key.projectID) >= limits.maxBundleBytesPerProject {
            throw APIError.quotaExceeded(
                "\(limits.maxBundleBytesPerProject) bytes of bundles stored (`maxBundleBytesPerProject`); retention deletes the oldest"
            )
        }
        let uploadID = try Self.uploadID(request)
        let declaredLength = request.headers[.contentLength].flatMap(Int.init)
        if let length = declaredLength, length > limits.maxBodyBytes {
            throw APIError.bodyTooLarge(limit: limits.maxBodyBytes)
        }
        if let available = DiskSpace.available(at: blobs.root),
            available < limits.minFreeBytes + Int64(declaredLength ?? limits.maxBodyBytes)
        {
            throw APIError.insufficientStorage(available: available)
        }
        if let uploadID,
            let existing = try await store.existingBundle(projectID: key.projectID, uploadID: uploadID, sha256: "")
        {
            return (Self.acknowledge(existing, duplicate: true), 0)
        }

        let temporary = try blobs.makeTemporaryFile()
        var committed = false
        defer { if !committed { unlink(temporary.path) } }
        let body = try await receiveBody(request, into: temporary)
        let (sha256, size) = (body.sha256, body.size)
        guard size > 0 else { throw APIError.emptyBody() }
        // The same bytes under another Upload-Id are found by the index transaction itself.

        // Inflating blocks a thread: a large bundle is inspected off the async executor. A small one
        // is inspected right here, from memory (typically a fraction of a millisecond; two thread
        // hops would cost more), but only up to 1 MiB inflated: a small body can inflate 200× and hold
        // a manifest whose decoding would stall every request on this executor, so past that the
        // inspection starts again on the thread pool.
        let inspector = BundleInspector(limits: limits, memory: inspectionMemory)
        let path = temporary.path
        let receivedAt = Date()
        // The plan (grouping, the reports' stored JSON) is made where the inspection runs, so that
        // neither a large report's encoding nor its signature is computed inside the write transaction.
        let makePlan = { @Sendable (inspected: BundleInspector.Inspection) throws -> IngestPlan in
            try IngestPlan(
                NewBundle(
                    projectID: key.projectID, uploadID: uploadID, sha256: sha256, size: Int64(size),
                    blob: BlobStore.blobName(sha256: sha256), manifest: inspected.manifest, files: inspected.files,
                    reports: inspected.reports, receivedAt: receivedAt))
        }
        let inspection = try body.bytes.flatMap { bytes throws(APIError) in
            try Self.inspectInline(bytes, with: inspector)
        }
        let plan: IngestPlan
        if let inspection {
            plan = try makePlan(inspection)
        } else if let bytes = body.bytes {
            plan = try await NIOThreadPool.singleton.runIfActive { try makePlan(try inspector.inspect(bytes: bytes)) }
        } else {
            plan = try await NIOThreadPool.singleton.runIfActive {
                try makePlan(try inspector.inspect(path: path, bodySize: size))
            }
        }
        if plan.implausibleSessionSummaries > 0 {
            metrics.rejected(reason: "implausible_sessions")
            logger.notice(
                "upload \(uploadID ?? "without an id"): \(plan.implausibleSessionSummaries) session summaries dropped as impossible for one installation"
            )
        }
        // From here the committer owns the temporary file: it makes it durable with the others of
        // its batch, then indexes them all in one transaction.
        committed = true
        let outcome = try await committer.submit(plan, temporaryPath: path)
        if case .stored(let record) = outcome {
            if plan.files.contains(where: { $0.kind == .log }) { indexerWakeup() }
            if plan.occurrences.contains(where: \.needsSymbolication) { symbolicationWakeup() }
            if !plan.occurrences.isEmpty { alertsWakeup() }
            logger.info(
                "stored bundle \(record.id): \(size) bytes, \(plan.files.count) files, \(plan.bundle.reportCount) reports"
            )
        }
        return (
            Self.acknowledge(outcome.record, duplicate: { if case .duplicate = outcome { true } else { false } }()),
            size
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
                projectID: key.projectID, kind: key.kind.rawValue, prefix: key.prefix, maxBodyBytes: limits.maxBodyBytes
            ),
            status: .ok)
    }

    private func authenticate(_ request: Request) async throws -> APIKey {
        guard let secret = AdminAuthentication.bearer(request) else { throw APIError.missingKey() }
        guard let key = try await keys.authenticate(secret) else { throw APIError.invalidKey() }
        return key
    }

    static let inlineInspectionBytes = 64 << 10
    static let inlineInflateBytes = 1 << 20

    /// The inspection, or nil when the body inflates past `inlineInflateBytes`.
    private static func inspectInline(_ bytes: Data, with inspector: BundleInspector) throws(APIError)
        -> BundleInspector.Inspection?
    {
        var inline = inspector
        inline.inlineWorkLimit = inlineInflateBytes
        do {
            return try inline.inspect(bytes: bytes)
        } catch {
            if error == .tooMuchWorkInline { return nil }
            throw error
        }
    }

    static func uploadID(_ request: Request) throws(APIError) -> String? {
        guard let value = request.headers[HTTPField.Name("Upload-Id")!] else { return nil }
        guard let uuid = UUID(uuidString: value.trimmingCharacters(in: .whitespaces)) else {
            throw .invalidUploadID(value)
        }
        return uuid.uuidString.lowercased()
    }

    struct ReceivedBody {
        var sha256: String
        var size: Int
        /// The whole body, when it is at most `inlineInspectionBytes`.
        var bytes: Data?
    }

    /// Writes the body to the file, hashing as it goes; stops at the size limit. A body of at most
    /// `inlineInspectionBytes` is gathered in memory and written with one call (a write per network
    /// chunk, then reading the file back to inspect it, cost more than the rest of a small upload);
    /// a larger one is streamed.
    private func receiveBody(_ request: Request, into file: BlobStore.TemporaryFile) async throws -> ReceivedBody {
        defer { close(file.descriptor) }
        var hasher = SHA256()
        var size = 0
        var gathered: ByteBuffer? = ByteBuffer()
        // A stalled body is closed by the connection's idle timeout; this bounds a trickling one.
        let deadline = ContinuousClock.now + limits.maxUploadDuration
        do {
            try await receiveChunks()
        } catch let rejection as APIError {
            throw rejection
        } catch {
            // The client went away or stalled past the idle timeout: its fault, not a server error.
            throw APIError.bodyIncomplete("\(error)")
        }
        func receiveChunks() async throws {
            for try await buffer in request.body {
                size += buffer.readableBytes
                if size > limits.maxBodyBytes { throw APIError.bodyTooLarge(limit: limits.maxBodyBytes) }
                if ContinuousClock.now > deadline {
                    throw APIError.uploadTooSlow(limit: limits.maxUploadDuration)
                }
                buffer.withUnsafeReadableBytes { hasher.update(bufferPointer: $0) }
                if gathered != nil, size <= Self.inlineInspectionBytes {
                    gathered?.writeImmutableBuffer(buffer)
                    continue
                }
                if let early = gathered {
                    try Self.write(early, to: file)
                    gathered = nil
                }
                try Self.write(buffer, to: file)
            }
        }
        let bytes = gathered.map { Data($0.readableBytesView) }
        if let gathered { try Self.write(gathered, to: file) }
        return ReceivedBody(sha256: hasher.finalize().lowercaseHex, size: size, bytes: bytes)
    }

    private static func write(_ buffer: ByteBuffer, to file: BlobStore.TemporaryFile) throws {
        try buffer.withUnsafeReadableBytes { try file.write($0) }
    }

    static func acknowledge(_ record: BundleRecord, duplicate: Bool) -> Acknowledgement {
        Acknowledgement(
            bundleID: record.id, uploadID: record.uploadID, sha256: record.sha256, size: record.size,
            files: record.fileCount, reports: record.reportCount, duplicate: duplicate)
    }
}
