import BlackboxSymbols
import Foundation
import HTTPTypes
import Hummingbird

/// The symbol store over HTTP, for the admin token and symbols keys (never ingest keys):
/// - `POST /api/v1/symbols/check` with `{"buildIds": […]}` answers which of them the project has
///   debug info for (`blackbox symbols upload` asks once per batch, then sends only the rest);
/// - `PUT /api/v1/symbols/<build-id>?name=<file name>` stores a file (`SymbolUpload`);
/// - `GET /api/v1/symbols` lists the project's files, newest first; `GET /api/v1/symbols/usage` what
///   they take of the project's quota;
/// - `DELETE /api/v1/symbols/<build-id>[?sha256=<hex>]` deletes the project's files of a build-id
///   (admin token only: a symbols key on a build machine archives, it does not delete);
/// - `GET /buildid/<build-id>/debuginfo` and `/executable`: the debuginfod protocol, so gdb and
///   elfutils' `debuginfod-find` fetch symbols from here (with the token as an `Authorization` header,
///   for example through `DEBUGINFOD_HEADERS_FILE`); `GET /buildid/<build-id>/source/<absolute path>`: a
///   source file from the build-id's source bundle (`SourceBundle`).
struct SymbolRoutes {
    let index: any SymbolIndex & SymbolicationStore & UsageStore
    let upload: SymbolUpload
    let blobs: any BlobStorage
    let limits: IngestLimits
    /// Build-ids per check request.
    static let maxBuildIDsPerCheck = 10_000

    func registerAPI(on group: RouterGroup<AuthenticatedContext>) {
        group.post("check") { request, context in
            struct Question: Decodable { var buildIds: [String] }
            struct Answer: Encodable {
                var present: [String]
                var missing: [String]
            }
            let question: Question
            do {
                question = try await request.decode(as: Question.self, context: context)
            } catch {
                throw APIError.invalidJSON("send {\"buildIds\": [\"<hex>\", …]}")
            }
            guard question.buildIds.count <= Self.maxBuildIDsPerCheck else {
                throw APIError.tooManyBuildIDs(limit: Self.maxBuildIDsPerCheck)
            }
            if let invalid = question.buildIds.first(where: { !ELFBuildID.isValid($0) }) {
                throw APIError.invalidBuildID(invalid)
            }
            let stored = try await index.symbolFiles(buildIDs: question.buildIds, in: context.scope)
            let present = Set(stored.filter(\.hasDebugInfo).map(\.buildID))
            return try JSONResponse.make(
                Answer(
                    present: question.buildIds.filter(present.contains),
                    missing: question.buildIds.filter { !present.contains($0) }))
        }
        group.put(":buildID") { request, context in try await upload.receive(request, context: context) }
        group.delete(":buildID") { request, context in
            guard context.key.kind == .admin else { throw APIError.forbidden() }
            let buildID = (context.parameters.get("buildID") ?? "").lowercased()
            guard ELFBuildID.isValid(buildID) else { throw APIError.invalidBuildID(buildID) }
            let sha256 = request.uri.queryParameters.get("sha256").map { String($0) }
            let deleted = try await SymbolFileRemoval(index: index, blobs: blobs)
                .remove(buildID: buildID, sha256: sha256, in: context.scope)
            guard !deleted.isEmpty else { throw APIError.notFound("symbol file") }
            struct Deleted: Encodable { var deleted: [SymbolFile] }
            return try JSONResponse.make(Deleted(deleted: deleted))
        }
        group.get("usage") { _, context in
            struct Usage: Encodable {
                var files: Int
                var bytes: Int64
                var maxFiles: Int
                var maxBytes: Int64
            }
            let usage = try await index.symbolUsage(projectID: context.scope.projectID)
            return try JSONResponse.make(
                Usage(
                    files: usage.files, bytes: usage.bytes, maxFiles: limits.maxSymbolFilesPerProject,
                    maxBytes: limits.maxSymbolBytesPerProject))
        }
        group.get("") { request, context in
            let page = request.page
            let files = try await index.symbolFiles(in: context.scope, page: page)
            let uses = try await index.reportCounts(buildIDs: files.map(\.buildID), in: context.scope)
            let listed = files.map { Merged($0, ReportCount(reports: uses[$0.buildID] ?? 0)) }
            return try JSONResponse.make(PageOf(listed, page: page, path: "/api/v1/symbols"))
        }
        group.get("missing") { request, context in
            let page = request.page
            let missing = try await index.missingSymbols(in: context.scope, page: page)
            return try JSONResponse.make(PageOf(missing, page: page, path: "/api/v1/symbols/missing"))
        }
    }

    /// How many of the project's reports have frames in a file's image.
    struct ReportCount: Encodable { var reports: Int }

    func registerDebuginfod(on group: RouterGroup<AuthenticatedContext>) {
        group.get(":buildID/debuginfo") { _, context in try await serve(\.hasDebugInfo, context: context) }
        group.get(":buildID/executable") { _, context in try await serve(\.hasCode, context: context) }
        group.get(":buildID/source/**") { request, context in try await serveSource(request, context: context) }
    }

    /// The path after `/source`, percent-decoded: debuginfod clients append the absolute path the
    /// debug info names, escaping what a URL cannot hold.
    private func serveSource(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        let buildID = (context.parameters.get("buildID") ?? "").lowercased()
        guard ELFBuildID.isValid(buildID) else { throw APIError.invalidBuildID(buildID) }
        let raw = request.uri.path
        guard let range = raw.range(of: "/source/"),
            let path = String(raw[raw.index(before: range.upperBound)...]).removingPercentEncoding, path.count > 1
        else { throw APIError.notFound("source file") }
        let source: Data?
        do {
            source = try await SourceContexts(index: index, blobs: blobs).source(
                buildID: buildID, path: path, in: context.scope)
        } catch let failure as SourceBundle.Failure {
            throw APIError.unreadableSource(failure)
        }
        guard let source else { throw APIError.notFound("source file") }
        return Response(
            status: .ok,
            headers: [
                .contentType: "text/plain; charset=utf-8", .contentLength: String(source.count),
                // The file's name as the debug info has it, in what a header may hold.
                HTTPField.Name("X-DEBUGINFOD-FILE")!: String(
                    (path.split(separator: "/").last ?? "source").filter { $0.isASCII && !$0.isNewline && $0 != "\r" }),
                HTTPField.Name("X-DEBUGINFOD-SIZE")!: String(source.count),
            ],
            body: .init(byteBuffer: ByteBuffer(data: source)))
    }

    /// The first uploaded file of the build-id with the wanted content (`SymbolUpload`: the first
    /// wins), streamed from its blob.
    private func serve(_ wanted: KeyPath<SymbolFile, Bool>, context: AuthenticatedContext) async throws -> Response {
        let buildID = (context.parameters.get("buildID") ?? "").lowercased()
        guard ELFBuildID.isValid(buildID) else { throw APIError.invalidBuildID(buildID) }
        guard
            let file = try await index.symbolFiles(buildIDs: [buildID], in: context.scope)
                .first(where: { $0[keyPath: wanted] })
        else { throw APIError.notFound("symbol file") }
        // Opened here, so a cached copy may go once this returns: the body reads from the descriptor.
        let body = try await blobs.withLocalFile(of: file.blob) { path in
            try await FileIO().loadFile(path: path, context: context)
        }
        return Response(
            status: .ok,
            headers: [
                .contentType: "application/octet-stream", .contentLength: String(file.size),
                // debuginfod clients show and cache the file under this name.
                HTTPField.Name("X-DEBUGINFOD-FILE")!: file.fileName,
                HTTPField.Name("X-DEBUGINFOD-SIZE")!: String(file.size),
            ],
            body: body)
    }
}
