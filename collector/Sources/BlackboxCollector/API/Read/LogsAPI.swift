import Foundation
import Hummingbird

/// `/api/v1`: a search of the project's log lines, and what one failing request's trace left.
enum LogsAPI {
    static func routes(store: ReadAPI.Store) -> RouteCollection<AuthenticatedContext> {
        let routes = RouteCollection(context: AuthenticatedContext.self)
        routes.get("logs/search") { request, context in
            let query: String
            switch SearchQuery.normalized(request.queryDictionary["q"] ?? "") {
            case .success(let words): query = words
            case .failure(.empty): throw APIError.missingQuery()
            case .failure(.tooLong): throw APIError.queryTooLong(limit: SearchQuery.maxBytes)
            }
            let page = request.page
            let hits = try await store.searchLogs(in: context.scope, query: query, page: page)
            let encoded = query.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
            return try JSONResponse.make(
                PageOf(hits, page: page, path: "/api/v1/logs/search", extraQuery: "q=\(encoded)&"))
        }
        // What one failing request's trace left: its reports (crashes and captured errors, in whichever
        // group) and the log lines that carry the trace id.
        routes.get("traces/:traceID") { request, context in
            guard let traceID = context.parameters.get("traceID").flatMap(TraceID.checked) else {
                throw APIError.invalidTraceID()
            }
            struct Trace: Encodable {
                var traceID: String
                var reports: [TracedReport]
                var logLines: [LogHit]
            }
            let reports = try await store.reports(traceID: traceID, in: context.scope, page: Page(limit: 100))
            let lines = try await store.searchLogs(in: context.scope, query: traceID, page: Page(limit: 100))
            return try JSONResponse.make(Trace(traceID: traceID, reports: reports, logLines: lines))
        }
        return routes
    }
}
