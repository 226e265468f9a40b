import Foundation
import Hummingbird

/// `/logs?q=…`: the project's indexed log lines that hold the words searched for.
struct LogsPage: PageModel {
    static let template = "logs"

    struct Results: Encodable {
        let count: Int
        let more: Bool
        let hits: [LogLineRow]
        let next: String?
    }

    let title = "Logs"
    let query: String
    let error: String?
    let searched: Results?

    static func routes(store: any CollectorStore, pages: PageRenderer) -> RouteCollection<AuthenticatedContext> {
        let routes = RouteCollection(context: AuthenticatedContext.self)
        routes.get("logs") { request, context in
            let typed = request.queryDictionary["q"] ?? ""
            switch SearchQuery.normalized(typed) {
            case .failure(.tooLong):
                return pages.render(
                    LogsPage(
                        query: typed, error: "Search for at most \(SearchQuery.maxBytes) bytes of words.", searched: nil
                    ))
            case .failure(.empty):
                return pages.render(LogsPage(query: typed, error: nil, searched: nil))
            case .success(let query):
                let page = request.page
                let hits = try await store.searchLogs(in: context.scope, query: query, page: page)
                let encoded = query.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
                let results = Results(
                    count: hits.count, more: hits.count == page.limit, hits: hits.map(LogLineRow.init),
                    next: hits.count == page.limit ? "/logs?q=\(encoded)&offset=\(page.offset + page.limit)" : nil)
                return pages.render(LogsPage(query: typed, error: nil, searched: results))
            }
        }
        return routes
    }
}

/// A log line found by a search, linked to its place in its file.
struct LogLineRow: Encodable {
    let fileID: Int64
    let path: String
    let lineNumber: Int
    let text: String

    init(_ hit: LogHit) {
        fileID = hit.fileID
        path = hit.path
        lineNumber = hit.lineNumber
        text = hit.text
    }
}
