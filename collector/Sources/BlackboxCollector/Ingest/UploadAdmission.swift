import Foundation
import HTTPTypes
import Hummingbird

/// The first stage of an upload, before a byte of the body is read: the key (an ingest key; a
/// symbols key archives symbols and nothing else), an upload slot for its project, the project's
/// quota, the declared length and the disk's free space. Every format's route starts here.
struct UploadAdmission: Sendable {
    let keys: KeyCache
    let limits: IngestLimits
    let usage: ProjectUsage
    /// Uploads being received now, for `maxConcurrentUploads` and `maxConcurrentUploadsPerProject`.
    let slots = UploadSlots()
    /// Where bodies are received, for the free-space check.
    let blobs: any BlobStorage
    let metrics: CollectorMetrics

    /// What an admitted upload carries to the next stages.
    struct Admitted: Sendable {
        var key: APIKey
        var uploadID: String?
        var declaredLength: Int?
        /// Let past the project's full quota as a small body (`pastQuota`): the format must store no
        /// more than its counts of what senders lost, or refuse it (`refusedOverQuota`).
        var overQuota = false
    }

    /// Runs `upload` with a slot held for the key's project; refusals are `APIError`s. A body that
    /// declares at most `pastQuota` bytes is let past a full quota, marked `overQuota`: a Sentry
    /// SDK's client report says what it dropped because of that very quota.
    func admit<Result>(
        _ request: Request, secret: String?, pastQuota: Int? = nil, _ upload: (Admitted) async throws -> Result
    ) async throws -> Result {
        guard let secret else { throw APIError.missingKey() }
        guard let key = try await keys.authenticate(secret) else { throw APIError.invalidKey() }
        guard key.kind != .symbols else { throw APIError.forbidden() }
        do {
            metrics.uploadsInProgress(
                try slots.enter(
                    project: key.projectID, limit: limits.maxConcurrentUploads,
                    perProject: limits.maxConcurrentUploadsPerProject))
        } catch {
            throw APIError.uploadSlots(
                error, limit: limits.maxConcurrentUploads, perProject: limits.maxConcurrentUploadsPerProject)
        }
        defer { metrics.uploadsInProgress(slots.leave(project: key.projectID)) }
        let declaredLength = request.headers[.contentLength].flatMap(Int.init)
        var overQuota = false
        if try await usage.bundleBytes(of: key.projectID) >= limits.maxBundleBytesPerProject {
            guard let pastQuota, let length = declaredLength, length <= pastQuota else {
                throw refusedOverQuota()
            }
            overQuota = true
        }
        if let length = declaredLength, length > limits.maxBodyBytes {
            throw APIError.bodyTooLarge(limit: limits.maxBodyBytes)
        }
        if let available = blobs.availableBytes(),
            available < limits.minFreeBytes + Int64(declaredLength ?? limits.maxBodyBytes)
        {
            throw APIError.insufficientStorage(available: available)
        }
        let admitted = Admitted(
            key: key, uploadID: try Self.uploadID(request), declaredLength: declaredLength, overQuota: overQuota)
        return try await upload(admitted)
    }

    /// The refusal of an upload to a project whose quota is used up.
    func refusedOverQuota() -> APIError {
        .quotaExceeded(
            "\(limits.maxBundleBytesPerProject) bytes of bundles stored (`maxBundleBytesPerProject`); retention deletes the oldest"
        )
    }

    static func uploadID(_ request: Request) throws(APIError) -> String? {
        guard let value = request.headers[HTTPField.Name("Upload-Id")!] else { return nil }
        guard let uuid = UUID(uuidString: value.trimmingCharacters(in: .whitespaces)) else {
            throw .invalidUploadID(value)
        }
        return uuid.uuidString.lowercased()
    }
}
