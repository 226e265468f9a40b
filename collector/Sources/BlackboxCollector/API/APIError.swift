import Foundation
import Hummingbird

/// Every refusal of the HTTP API, in one JSON shape: `{"error": "<code>", "message": "…"}` with an
/// HTTP status, a machine-readable code and a sentence for people. Thrown anywhere in a route or
/// middleware; Hummingbird renders it (`HTTPResponseError`). The uploader's retry contract:
/// 400/413/422 are final, never resent.
public struct APIError: HTTPResponseError, Sendable, Equatable, CustomStringConvertible {
    public var status: HTTPResponse.Status
    public var code: String
    public var message: String
    /// Seconds after which a resend may succeed, sent as `Retry-After` (with 503).
    public var retryAfter: Int? = nil

    public var description: String { "\(status.code) \(code): \(message)" }

    private struct Body: Encodable {
        var error: String
        var message: String
    }

    public func response(from request: Request, context: some RequestContext) throws -> Response {
        let data = try JSONResponse.encoder.encode(Body(error: code, message: message))
        var headers: HTTPFields = [.contentType: "application/json; charset=utf-8"]
        if let retryAfter { headers[.retryAfter] = String(retryAfter) }
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }

    static func missingKey() -> Self {
        .init(status: 401, code: "missing_key", message: "send Authorization: Bearer <project key>")
    }
    static func invalidKey() -> Self {
        .init(status: 401, code: "invalid_key", message: "the key is unknown or revoked")
    }
    static func forbidden() -> Self { .init(status: 403, code: "forbidden", message: "this key may not do that") }
    static func invalidUploadID(_ value: String) -> Self {
        .init(status: 400, code: "invalid_upload_id", message: "Upload-Id must be a UUID, got \"\(value.prefix(64))\"")
    }
    static func bodyTooLarge(limit: Int) -> Self {
        .init(status: 413, code: "body_too_large", message: "the body is larger than the limit of \(limit) bytes")
    }
    static func emptyBody() -> Self { .init(status: 400, code: "empty_body", message: "the body is empty") }
    static func notAZip() -> Self { .init(status: 422, code: "not_a_zip", message: "the body is not a zip archive") }
    static func corrupt(_ detail: String) -> Self {
        .init(status: 422, code: "corrupt_zip", message: "the zip archive is damaged or truncated: \(detail)")
    }
    static func tooManyEntries(limit: Int) -> Self {
        .init(status: 422, code: "too_many_entries", message: "the zip has more than \(limit) entries")
    }
    static func unsafePath(_ path: String) -> Self {
        .init(
            status: 422, code: "unsafe_path",
            message: "entry \"\(path.prefix(200))\" has an absolute path, a .. component, a backslash or a NUL")
    }
    static func symlink(_ path: String) -> Self {
        .init(status: 422, code: "symlink_entry", message: "entry \"\(path.prefix(200))\" is a symbolic link")
    }
    static func nestedArchive(_ path: String) -> Self {
        .init(status: 422, code: "nested_archive", message: "entry \"\(path.prefix(200))\" is itself a zip archive")
    }
    static func entryTooLarge(_ path: String, limit: Int) -> Self {
        .init(
            status: 422, code: "entry_too_large", message: "entry \"\(path.prefix(200))\" inflates past \(limit) bytes")
    }
    static func totalTooLarge(limit: Int) -> Self {
        .init(status: 422, code: "uncompressed_too_large", message: "the zip inflates past \(limit) bytes")
    }
    /// A body sent with a `Content-Encoding` that decodes past what its endpoint takes.
    static func decodedTooLarge(limit: Int) -> Self {
        .init(status: 422, code: "uncompressed_too_large", message: "the body decodes past \(limit) bytes")
    }
    static func compressionRatio(limit: Int, of what: String = "the zip") -> Self {
        .init(status: 422, code: "compression_ratio", message: "\(what) inflates more than \(limit)× its size")
    }
    static func invalidManifest(_ detail: String) -> Self {
        .init(status: 422, code: "invalid_manifest", message: "manifest.json: \(detail)")
    }
    static func manifestMismatch(_ detail: String) -> Self {
        .init(status: 422, code: "manifest_mismatch", message: detail)
    }
    static func invalidReport(_ path: String, _ detail: String) -> Self {
        .init(status: 422, code: "invalid_report", message: "\(path.prefix(200)): \(detail)")
    }
    static func duplicateEntry(_ path: String) -> Self {
        .init(
            status: 422, code: "duplicate_entry",
            message: "the zip holds more than one entry named \"\(path.prefix(200))\"")
    }
    static func reportsTooLarge(limit: Int) -> Self {
        .init(
            status: 422, code: "reports_too_large",
            message: "the reports and manifest of one bundle inflate past \(limit) bytes")
    }
    static func tooManyUploads(limit: Int) -> Self {
        .init(
            status: 503, code: "too_many_uploads",
            message: "\(limit) uploads are being received already; resend later", retryAfter: 2)
    }
    /// The inspections running now hold the memory their parsing needs (`maxReportBytesInFlight`).
    static func inspectionMemoryFull(limit: Int) -> Self {
        .init(
            status: 503, code: "too_many_uploads",
            message: "uploads being inspected hold the \(limit >> 20) MiB set aside for it already; resend later",
            retryAfter: 2)
    }
    static func tooManyProjectUploads(limit: Int) -> Self {
        .init(
            status: 503, code: "too_many_uploads",
            message: "\(limit) uploads of this project are being received already; resend later", retryAfter: 2)
    }
    static func uploadSlots(_ refusal: UploadSlots.Refusal, limit: Int, perProject: Int) -> Self {
        switch refusal {
        case .full: tooManyUploads(limit: limit)
        case .projectFull: tooManyProjectUploads(limit: perProject)
        }
    }
    static func quotaExceeded(_ what: String) -> Self {
        .init(status: 413, code: "quota_exceeded", message: "the project's quota is used up: \(what)")
    }
    static func slowerThan(bytesPerSecond: Int) -> Self {
        .init(
            status: 408, code: "upload_too_slow",
            message: "the body arrives slower than \(bytesPerSecond) bytes a second on average")
    }
    static func symbolFileExists(_ existing: SymbolFile) -> Self {
        .init(
            status: 409, code: "symbol_file_exists",
            message:
                "build-id \(existing.buildID) already has \(existing.fileName) with the same contents (the first upload of a build-id is the one used); to replace it, delete it with the admin token, or send ?replace=1 with the admin token"
        )
    }
    static func insufficientStorage(available: Int64) -> Self {
        .init(
            status: 503, code: "insufficient_storage",
            message: "the collector is low on disk space (\(available) bytes free); resend later", retryAfter: 60)
    }
    static func bodyIncomplete(_ detail: String) -> Self {
        .init(status: 400, code: "body_incomplete", message: "the body ended before it was complete: \(detail)")
    }
    static func uploadTooSlow(limit: Duration) -> Self {
        .init(
            status: 408, code: "upload_too_slow",
            message: "the body did not arrive within \(limit.components.seconds) seconds")
    }
    /// Not an answer: tells the ingest service that a small body inflates to more than it inspects
    /// on the async executor (see `IngestService`).
    static let tooMuchWorkInline = Self(
        status: .internalServerError, code: "inline_limit", message: "inspect on the thread pool")

    static func noFiles() -> Self { .init(status: 422, code: "empty_zip", message: "the zip holds no files") }

    // The read side.
    static func notFound(_ what: String) -> Self {
        .init(status: 404, code: "not_found", message: "no such \(what) in this project")
    }
    static func invalidTraceID() -> Self {
        .init(
            status: 400, code: "invalid_trace_id",
            message: "a trace id is 1-\(TraceID.maxLength) letters, digits, '-', '_', '.' or ':'")
    }

    static func invalidID() -> Self { .init(status: 400, code: "invalid_id", message: "the id must be a number") }
    static func missingQuery() -> Self {
        .init(status: 400, code: "missing_query", message: "give the search words as q=")
    }
    static func queryTooLong(limit: Int) -> Self {
        .init(status: 400, code: "query_too_long", message: "search for at most \(limit) bytes of words")
    }

    // Symbol files.
    static func invalidBuildID(_ value: String) -> Self {
        .init(
            status: 400, code: "invalid_build_id",
            message:
                "a build-id is 4 to 128 lowercase hex digits (as `readelf -n` prints it), got \"\(value.prefix(140))\"")
    }
    static func invalidFileName() -> Self {
        .init(
            status: 400, code: "invalid_file_name",
            message:
                "give the file's name as name=, at most 255 bytes, without slashes, control characters, or . and ..")
    }
    static func unsupportedEncoding(_ value: String, accepted: [String] = ["gzip", "identity"]) -> Self {
        .init(
            status: 415, code: "unsupported_encoding",
            message: "Content-Encoding must be \(accepted.joined(separator: ", ")), got \"\(value.prefix(64))\"")
    }
    static func invalidForm(_ detail: String) -> Self {
        .init(status: 400, code: "invalid_form", message: detail)
    }
    static func projectMismatch(_ projectID: Int64) -> Self {
        .init(status: 403, code: "project_mismatch", message: "the key is not a key of project \(projectID)")
    }
    static func invalidEnvelope(_ detail: String) -> Self {
        .init(status: 400, code: "invalid_envelope", message: "the body is not a valid Sentry envelope: \(detail)")
    }
    static func invalidOTLP(_ detail: String) -> Self {
        .init(status: 400, code: "invalid_otlp", message: "the body is not an OTLP logs request: \(detail)")
    }
    static func unsupportedContentType(_ type: String?, accepted: [String]) -> Self {
        .init(
            status: 415, code: "unsupported_content_type",
            message: "Content-Type \(type.map { "'\($0)'" } ?? "missing"): send \(accepted.joined(separator: " or "))")
    }
    static func corruptEncoding(_ detail: String) -> Self {
        .init(status: 400, code: "corrupt_encoding", message: "the encoded body cannot be decoded: \(detail)")
    }
    static func notGzip(_ detail: String) -> Self {
        .init(status: 422, code: "corrupt_gzip", message: "the gzip body is damaged or truncated: \(detail)")
    }
    static func notELF() -> Self {
        .init(status: 422, code: "not_elf", message: "the file is not a 64-bit little-endian ELF file")
    }
    static func buildIDMismatch(claimed: String, found: String?) -> Self {
        .init(
            status: 422, code: "build_id_mismatch",
            message:
                "the upload is for build-id \(claimed), but the file's note says \(found ?? "nothing (it has no build-id)")"
        )
    }
    static func notSourceBundle(_ failure: SourceBundle.Failure) -> Self {
        .init(status: 422, code: "not_source_bundle", message: "\(failure)")
    }
    static func unreadableSource(_ failure: SourceBundle.Failure) -> Self {
        .init(status: 422, code: "unreadable_source", message: "\(failure)")
    }
    static func noSymbols() -> Self {
        .init(
            status: 422, code: "no_symbols", message: "the file has no debug info, no symbol table and no code")
    }
    static func tooManyBuildIDs(limit: Int) -> Self {
        .init(status: 400, code: "too_many_build_ids", message: "ask about at most \(limit) build-ids at once")
    }
    static func invalidJSON(_ detail: String) -> Self {
        .init(status: 400, code: "invalid_json", message: detail)
    }

    // Readiness and storage.
    static func storageUnavailable(_ error: any Error) -> Self {
        .init(status: 503, code: "storage_unavailable", message: "\(error)")
    }
    /// The bucket did not confirm a blob (unreachable, refusing the credentials, gone): nothing was
    /// acknowledged, and the client resends.
    static func blobStoreUnavailable(_ error: any Error) -> Self {
        .init(status: 503, code: "blob_store_unavailable", message: "\(error)", retryAfter: 30)
    }
    static func diskLow(available: Int64, needed: Int64) -> Self {
        .init(
            status: 503, code: "disk_low",
            message: "\(available) bytes free where blobs are stored; at least \(needed) needed")
    }
}
