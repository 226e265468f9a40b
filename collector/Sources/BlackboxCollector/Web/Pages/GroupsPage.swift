import BlackboxFormat
import Foundation
import Hummingbird

/// `/`: the project's crash groups, filtered and ordered as the query asks, with 14 days of trend.
struct GroupsPage: PageModel {
    static let template = "groups"

    struct Row: Encodable {
        let id: Int64
        let title: String
        let kind: String
        let count: Int
        let lastSeen: String
        let versions: String
        let state: String
        let sparkline: String
    }

    /// The filter form, filled in with the query the page shows.
    struct Filter: Encodable {
        struct Choice: Encodable {
            let value: String
            let name: String
            let selected: Bool
        }
        let q: String
        let kind: String
        let version: String
        let host: String
        let trace: String
        let states: [Choice]
        let diagnoses: [Choice]
        let orders: [Choice]

        init(_ query: GroupQuery) {
            q = query.text ?? ""
            kind = query.kind ?? ""
            version = query.version ?? ""
            host = query.host ?? ""
            trace = query.traceID ?? ""
            states = ([nil] + GroupStatus.State.allCases).map { state in
                Choice(
                    value: state?.rawValue ?? "", name: state?.rawValue ?? "any state", selected: state == query.state)
            }
            diagnoses = ([nil] + CrashDiagnosis.Kind.allCases).map { kind in
                Choice(
                    value: kind?.rawValue ?? "", name: kind?.rawValue ?? "any diagnosis",
                    selected: kind == query.diagnosis)
            }
            orders = GroupQuery.Order.allCases.map { order in
                Choice(value: order.rawValue, name: order.rawValue, selected: order == query.order)
            }
        }
    }

    let title: String
    let hasGroups: Bool
    let groups: [Row]
    let filter: Filter
    let next: String?

    static func routes(store: any CollectorStore, pages: PageRenderer) -> RouteCollection<AuthenticatedContext> {
        let routes = RouteCollection(context: AuthenticatedContext.self)
        routes.get("/") { request, context in
            let page = request.page
            let query: GroupQuery
            do {
                query = try GroupQuery(parameters: request.queryDictionary)
            } catch let error as APIError {
                return pages.message("Crash groups", "\(error.message).", status: .badRequest)
            }
            let groups = try await store.groups(in: context.scope, query: query, page: page)
            let days = Trends.days(14, endingAt: query.now)
            let histogram = try await store.occurrenceHistogram(
                groupIDs: groups.map(\.id), in: context.scope, since: days.since, bucketSeconds: 86_400, buckets: 14)
            let rows = groups.map { group in
                Row(
                    id: group.id, title: group.title, kind: group.kind, count: group.count,
                    lastSeen: iso(group.lastSeen), versions: countSummary(group.versions), state: group.state.rawValue,
                    sparkline: SVGChart(
                        bars: Trends.bars(histogram[group.id] ?? [], labels: days.labels), name: "sparkline"
                    ).sparkline())
            }
            return pages.render(
                GroupsPage(
                    title: query.version.map { "Top crashers in \($0)" } ?? "Crash groups", hasGroups: !groups.isEmpty,
                    groups: rows, filter: Filter(query),
                    next: groups.count == page.limit
                        ? "/?\(query.queryString)offset=\(page.offset + page.limit)" : nil))
        }
        return routes
    }
}
