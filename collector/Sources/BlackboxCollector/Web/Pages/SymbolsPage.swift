import BlackboxSymbols
import Foundation
import Hummingbird

/// `/symbols`: the project's symbol files and the debug files reports still wait for;
/// `POST /symbols/:buildID/delete` removes one.
struct SymbolsPage: PageModel {
    static let template = "symbols"

    struct File: Encodable {
        let buildID: String
        let fileName: String
        let size: Int64
        let sha256: String
        let uploadedAt: String
        let reports: Int
        let contents: String
        /// Why the symbolizer no longer reads it, if it does not.
        let leftOut: String?
    }

    struct Missing: Encodable {
        let buildID: String
        let reports: Int
        let lastSeen: String
    }

    let title = "Symbols"
    /// The symbolizer the collector symbolicates with; empty: none (the page says so).
    let symbolizer: String
    let csrf: String
    let hasFiles: Bool
    let files: [File]
    let hasMissing: Bool
    let missing: [Missing]
    let next: String?

    static func routes(
        store: any CollectorStore, symbolBlobs: any BlobStorage, symbolizer: String?, pages: PageRenderer
    ) -> RouteCollection<AuthenticatedContext> {
        let routes = RouteCollection(context: AuthenticatedContext.self)
        routes.get("symbols") { request, context in
            let page = request.page
            let files = try await store.symbolFiles(in: context.scope, page: page)
            let uses = try await store.reportCounts(buildIDs: files.map(\.buildID), in: context.scope)
            let missing = try await store.missingSymbols(in: context.scope, page: Page(limit: 100))
            return pages.render(
                SymbolsPage(
                    symbolizer: symbolizer ?? "", csrf: WebSessions.formToken(for: request) ?? "",
                    hasFiles: !files.isEmpty,
                    files: files.map { file in
                        File(
                            buildID: file.buildID, fileName: file.fileName, size: file.size, sha256: file.sha256,
                            uploadedAt: iso(file.uploadedAt), reports: uses[file.buildID] ?? 0,
                            contents: [
                                file.hasDebugInfo ? "debug info" : nil, file.hasCode ? "code" : nil,
                                file.hasSources ? "sources" : nil,
                            ]
                            .compactMap { $0 }.joined(separator: ", "),
                            leftOut: file.isLeftOut
                                ? "llvm-symbolizer failed \(file.symbolizerFailures) times on it: left out of symbolication"
                                : nil)
                    },
                    hasMissing: !missing.isEmpty,
                    missing: missing.map {
                        Missing(buildID: $0.buildID, reports: $0.reports, lastSeen: iso($0.lastSeen))
                    },
                    next: files.count == page.limit ? "/symbols?offset=\(page.offset + page.limit)" : nil))
        }
        routes.post("symbols/:buildID/delete") { request, context in
            let form = try await WebForm.read(request)
            guard WebSessions.isGenuineForm(request, token: form["csrf"]) else {
                return pages.message("Not deleted", WebForm.expired, status: .forbidden)
            }
            let buildID = context.parameters.get("buildID") ?? ""
            guard ELFBuildID.isValid(buildID), let sha256 = form["sha256"], !sha256.isEmpty else {
                return pages.message("Not deleted", "No such symbol file.", status: .badRequest)
            }
            let deleted = try await SymbolFileRemoval(index: store, blobs: symbolBlobs)
                .remove(buildID: buildID, sha256: sha256, in: context.scope)
            guard !deleted.isEmpty else { return pages.notFound() }
            return Response(status: .seeOther, headers: [.location: "/symbols"])
        }
        return routes
    }
}
