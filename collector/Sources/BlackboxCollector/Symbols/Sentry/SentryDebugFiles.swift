import BlackboxSymbols
import Crypto
import Foundation
import Hummingbird
import NIOPosix

/// `sentry-cli debug-files upload` into the symbol store (authenticated with a symbols key or the
/// admin token as `Bearer`; an ingest key is refused):
/// 1. `GET /api/0/organizations/<org>/chunk-upload/`: the chunking it should use;
/// 2. `POST /api/0/projects/<org>/<project>/files/difs/assemble/`: for each file (named by its
///    sha1), `ok` when the project has it already, else the chunks still missing;
/// 3. `POST …/chunk-upload/` with those chunks (`DebugFileChunks`);
/// 4. assemble again: the chunks are joined, checked against the file's sha1 and stored exactly as
///    `PUT /api/v1/symbols/<build-id>` stores a file (`SymbolUpload.store`: ELF, build-id note, quotas,
///    first upload wins), answered `ok`, or `error` with the reason.
/// Any organization slug is accepted (the collector has one); the project is named by its name or
/// id and must be the key's.
struct SentryDebugFiles: Sendable {
    let store: any CollectorStore
    let upload: SymbolUpload
    let chunks: DebugFileChunks
    /// The collector's address as clients reach it; nil: the request's `Host`.
    let publicURL: String?

    static let chunkBytes = 8 << 20
    static let chunksPerRequest = 4
    /// Files one assemble request may name, and chunks per file (2 GiB at 8 MiB).
    static let maxFilesPerAssemble = 64
    static let maxChunksPerFile = 256

    func register(on group: RouterGroup<AuthenticatedContext>) {
        group.get("organizations/:org/chunk-upload") { request, context in
            try settings(request, organization: context.parameters.get("org") ?? "blackbox")
        }
        group.post("organizations/:org/chunk-upload") { request, context in
            try await upload.admitted(
                project: context.scope.projectID, declaredLength: nil
            ) { _ in try await chunks.receive(request, project: context.scope.projectID) }
            return Response(status: .ok)
        }
        group.post("projects/:org/:project/files/difs/assemble") { request, context in
            try await assemble(request, context: context)
        }
    }

    private struct Settings: Encodable {
        var url: String
        var chunkSize: Int
        var chunksPerRequest: Int
        var maxRequestSize: Int
        var maxFileSize: Int
        var concurrency: Int
        var hashAlgorithm: String
        var compression: [String]
        var accept: [String]
    }

    private func settings(_ request: Request, organization: String) throws -> Response {
        let base = publicURL ?? "http://\(request.head.authority ?? "localhost")"
        return try JSONResponse.make(
            Settings(
                url: "\(base)/api/0/organizations/\(organization)/chunk-upload/", chunkSize: Self.chunkBytes,
                chunksPerRequest: Self.chunksPerRequest, maxRequestSize: chunks.maxRequestBytes,
                maxFileSize: upload.limits.maxSymbolFileBytes, concurrency: 1, hashAlgorithm: "sha1",
                compression: ["gzip"], accept: ["debug_files", "sources"]),
            status: .ok)
    }

    private struct FileRequest: Decodable {
        var name: String?
        var chunks: [String]?
    }

    private struct FileAnswer: Encodable {
        var state: String
        var missingChunks: [String] = []
        var detail: String? = nil
    }

    private func assemble(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        let named = context.parameters.get("project") ?? ""
        let project = try await store.projects().first { $0.name == named || String($0.id) == named }
        guard let project, project.id == context.scope.projectID else {
            throw APIError.notFound("project \(named.prefix(100))")
        }
        let body = try await request.body.collect(upTo: 1 << 20)
        let files: [String: FileRequest]
        do {
            files = try JSONDecoder().decode([String: FileRequest].self, from: Data(buffer: body))
        } catch {
            throw APIError.invalidJSON("the body must map file sha1s to {name, chunks}")
        }
        guard files.count <= Self.maxFilesPerAssemble else {
            throw APIError.invalidJSON("at most \(Self.maxFilesPerAssemble) files at once")
        }
        var answers: [String: FileAnswer] = [:]
        for (checksum, file) in files {
            answers[checksum] = try await assemble(checksum: checksum.lowercased(), file, in: context.scope)
        }
        return try JSONResponse.make(answers, status: .ok)
    }

    private func assemble(checksum: String, _ file: FileRequest, in scope: ProjectScope) async throws -> FileAnswer {
        let chunkNames = (file.chunks ?? []).map { $0.lowercased() }
        guard checksum.count == 40, checksum.allSatisfy(\.isHexDigit),
            chunkNames.count <= Self.maxChunksPerFile,
            chunkNames.allSatisfy({ $0.count == 40 && $0.allSatisfy(\.isHexDigit) })
        else {
            return FileAnswer(
                state: "error", detail: "checksums must be sha1s, at most \(Self.maxChunksPerFile) chunks")
        }
        // sentry-cli names each chunk once; one small chunk named 256 times would be a 2 GiB join
        // (security review 2026-11-27, finding 5).
        guard Set(chunkNames).count == chunkNames.count else {
            return FileAnswer(state: "error", detail: "a chunk is named more than once")
        }
        if try await store.symbolFile(sha1: checksum, in: scope) != nil { return FileAnswer(state: "ok") }
        let missing = chunkNames.filter { !chunks.chunks.contains($0, project: scope.projectID) }
        guard !chunkNames.isEmpty, missing.isEmpty else {
            return FileAnswer(state: "not_found", missingChunks: missing)
        }
        let name = (file.name ?? "").split(separator: "/").last.map(String.init) ?? ""
        guard SymbolUpload.isAcceptable(name: name) else {
            return FileAnswer(state: "error", detail: APIError.invalidFileName().message)
        }
        defer { chunks.chunks.remove(chunkNames, project: scope.projectID) }
        do {
            return try await upload.admitted(project: scope.projectID, declaredLength: nil) { room in
                let temporary = try upload.blobs.makeTemporaryFile()
                defer { unlink(temporary.path) }
                let body = try await join(chunkNames, project: scope.projectID, into: temporary, room: room)
                guard body.sha1 == checksum else {
                    return FileAnswer(state: "error", detail: "the chunks join to sha1 \(body.sha1), not \(checksum)")
                }
                _ = try await upload.store(
                    body, at: temporary.path, claimedBuildID: nil, name: name, replace: false, in: scope)
                return FileAnswer(state: "ok")
            }
        } catch let refusal as APIError {
            upload.metrics.symbolUploadRejected(reason: refusal.code)
            return FileAnswer(state: "error", detail: refusal.message)
        }
    }

    /// The chunks, in order, into one file (hashed as written), within the project's room and the
    /// symbol file size limit; on a thread, since it copies up to gigabytes.
    private func join(_ names: [String], project: Int64, into file: TemporaryBlobFile, room: Int64) async throws
        -> SymbolUpload.ReceivedBody
    {
        let paths = names.map { chunks.chunks.path(of: $0, project: project) }
        let limit = min(Int64(upload.limits.maxSymbolFileBytes), room)
        return try await NIOThreadPool.singleton.runIfActive {
            defer { close(file.descriptor) }
            var sha256 = SHA256()
            var sha1 = Insecure.SHA1()
            var size: Int64 = 0
            for path in paths {
                let data = try Data(contentsOf: URL(fileURLWithPath: path))
                size += Int64(data.count)
                guard size <= limit else { throw APIError.totalTooLarge(limit: Int(limit)) }
                sha256.update(data: data)
                sha1.update(data: data)
                try data.withUnsafeBytes { try file.write($0) }
            }
            return SymbolUpload.ReceivedBody(
                sha256: sha256.finalize().lowercaseHex, sha1: sha1.finalize().lowercaseHex, size: size)
        }
    }
}
