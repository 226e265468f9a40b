import Foundation
import Hummingbird

/// `/traces/:traceID`: what one failing request's trace left: its reports, in whichever group, and
/// its log lines.
struct TracePage: PageModel {
    static let template = "trace"
    static let maxReports = 100
    static let maxLines = 200

    struct Report: Encodable {
        let id: Int64
        let groupID: Int64
        let kind: String
        let occurredAt: String
        let reason: String
        let version: String
        let host: String
    }

    let title: String
    let traceID: String
    let hasReports: Bool
    let reports: [Report]
    let hasLines: Bool
    let moreLines: Bool
    let lines: [LogLineRow]

    static func routes(store: any CollectorStore, pages: PageRenderer) -> RouteCollection<AuthenticatedContext> {
        let routes = RouteCollection(context: AuthenticatedContext.self)
        routes.get("traces/:traceID") { _, context in
            guard let traceID = context.parameters.get("traceID").flatMap(TraceID.checked) else {
                return pages.message(
                    "Trace", "A trace id is letters, digits, '-', '_', '.' or ':'.", status: .badRequest)
            }
            let reports = try await store.reports(traceID: traceID, in: context.scope, page: Page(limit: maxReports))
            let lines = try await store.searchLogs(in: context.scope, query: traceID, page: Page(limit: maxLines))
            return pages.render(
                TracePage(
                    title: "Trace \(traceID)", traceID: traceID, hasReports: !reports.isEmpty,
                    reports: reports.map { report in
                        Report(
                            id: report.reportID, groupID: report.groupID, kind: report.kind,
                            occurredAt: iso(report.occurredAt), reason: report.reason ?? "",
                            version: report.appVersion ?? "", host: report.host ?? "")
                    },
                    hasLines: !lines.isEmpty, moreLines: lines.count == maxLines, lines: lines.map(LogLineRow.init)))
        }
        return routes
    }
}
