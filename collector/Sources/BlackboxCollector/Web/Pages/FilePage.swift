import Foundation
import Hummingbird

/// `/files/:id`: the beginning of one file of a bundle, by line (a `.gz` log inflated as far as shown).
struct FilePage: PageModel {
    static let template = "file"
    /// A few MiB of lines, not the whole of a 256 MiB log.
    static let maxLines = 20_000
    static let maxBytes = 8 << 20

    struct Line: Encodable {
        let number: Int
        let text: String
    }

    let title: String
    let path: String
    let bundleID: Int64
    let fileID: Int64
    let truncated: Bool
    let shown: Int
    let lines: [Line]

    static func routes(store: any CollectorStore, reader: BundleReader, pages: PageRenderer)
        -> RouteCollection<AuthenticatedContext>
    {
        let routes = RouteCollection(context: AuthenticatedContext.self)
        routes.get("files/:id") { _, context in
            guard let file = try await store.file(id: try context.id(), in: context.scope),
                let bundle = try await store.bundle(id: file.bundleID, in: context.scope)
            else { return pages.notFound() }
            let (head, isComplete) = try await reader.withBundle(bundle.blob) {
                try $0.prefix(of: file.path, limit: maxBytes, gunzip: file.path.hasSuffix(".gz"))
            }
            let lines = head.withUnsafeBytes {
                LocalBundle.lines(in: $0, maxLineBytes: 8 << 10, maxLines: maxLines + 1)
            }
            return pages.render(
                FilePage(
                    title: file.path, path: file.path, bundleID: bundle.id, fileID: file.id,
                    truncated: !isComplete || lines.count > maxLines, shown: min(lines.count, maxLines),
                    lines: lines.prefix(maxLines).enumerated().map {
                        Line(number: $0.offset + 1, text: String($0.element))
                    }))
        }
        return routes
    }
}
