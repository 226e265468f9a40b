import Foundation
import Hummingbird

/// `/releases`: each app version's sessions and how they ended; `/releases?version=V`: one of them
/// (`ReleasePage`).
struct ReleasesPage: PageModel {
    static let template = "releases"

    struct Row: Encodable {
        let figures: ReleaseFigures
        let sparkline: String
    }

    /// What senders dropped before arrival in the last 30 days.
    struct Loss: Encodable {
        let version: String
        let category: String
        let reason: String
        let quantity: Int
        let lastDay: String
    }

    let title = "Releases"
    let hasReleases: Bool
    let releases: [Row]
    let hasLosses: Bool
    let losses: [Loss]

    static func routes(store: any CollectorStore, pages: PageRenderer) -> RouteCollection<AuthenticatedContext> {
        let routes = RouteCollection(context: AuthenticatedContext.self)
        routes.get("releases") { request, context in
            let days = Trends.days(30, endingAt: Date())
            if let version = request.queryDictionary["version"], !version.isEmpty {
                guard let release = try await store.release(version: version, in: context.scope) else {
                    return pages.notFound()
                }
                return pages.render(try await ReleasePage(release, days: days, store: store, in: context.scope))
            }
            var rows: [Row] = []
            let releases = try await store.releases(in: context.scope, page: request.page)
            for release in releases {
                let counts = try await store.releaseDays(
                    version: release.version, in: context.scope, since: days.since, days: 30)
                rows.append(
                    Row(
                        figures: ReleaseFigures(release),
                        sparkline: SVGChart(bars: Trends.bars(counts.sessions, labels: days.labels), name: "sparkline")
                            .sparkline()))
            }
            let losses = try await store.losses(in: context.scope, since: days.since).map {
                Loss(
                    version: $0.version, category: $0.category, reason: $0.reason, quantity: $0.quantity,
                    lastDay: iso($0.lastDay))
            }
            return pages.render(
                ReleasesPage(hasReleases: !releases.isEmpty, releases: rows, hasLosses: !losses.isEmpty, losses: losses)
            )
        }
        return routes
    }
}

/// One release: its figures, 30 days of sessions, and its ten most frequent groups.
struct ReleasePage: PageModel {
    static let template = "release"

    struct Group: Encodable {
        let id: Int64
        let title: String
        let count: Int
    }

    let title: String
    let figures: ReleaseFigures
    let sessionsChart: String
    let crashedChart: String
    let groups: [Group]
    let topLink: String

    init(_ release: ReleaseHealth, days: Trends.Buckets, store: any CollectorStore, in scope: ProjectScope) async throws
    {
        let version = release.version
        let counts = try await store.releaseDays(version: version, in: scope, since: days.since, days: 30)
        var query = GroupQuery()
        query.version = version
        query.order = .count
        title = "Release \(version)"
        figures = ReleaseFigures(release)
        sessionsChart = SVGChart(bars: Trends.bars(counts.sessions, labels: days.labels), name: "chart-sessions")
            .render(labelEvery: 5, caption: "Sessions per day")
        crashedChart = SVGChart(
            bars: Trends.bars(zip(counts.sessions, counts.clean).map { $0 - $1 }, labels: days.labels),
            name: "chart-crashed"
        ).render(labelEvery: 5, caption: "Sessions that did not end cleanly, per day")
        groups = try await store.groups(in: scope, query: query, page: Page(limit: 10)).map {
            Group(id: $0.id, title: $0.title, count: $0.versions[version] ?? 0)
        }
        topLink = "/?" + query.queryString
    }
}

/// A release's session counts as the release pages show them.
struct ReleaseFigures: Encodable {
    let version: String
    let link: String
    let sessions: Int
    let clean: Int
    let crashed: Int
    let hung: Int
    let killed: Int
    let crashFree: String
    let requests: Int
    let requestErrors: Int
    let crashedRequests: Int
    /// `99.9 %`, or a dash for a version no request was counted for.
    let crashFreeRequests: String
    let errorFreeRequests: String
    let groupCount: Int
    let lastDay: String

    init(_ release: ReleaseHealth) {
        version = release.version
        link = "/releases?version=\(release.version.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")"
        sessions = release.sessions
        clean = release.clean
        crashed = release.crashed
        hung = release.hung
        killed = release.killed
        crashFree = String(format: "%.1f %%", release.crashFreeRate * 100)
        requests = release.requests.total
        requestErrors = release.requests.serverErrors
        crashedRequests = release.requests.crashed
        crashFreeRequests = release.crashFreeRequestRate.map { Self.percent($0) } ?? "–"
        errorFreeRequests = release.errorFreeRequestRate.map { Self.percent($0) } ?? "–"
        groupCount = release.groups
        lastDay = iso(release.lastDay)
    }

    /// Two decimals: a server's error rate lives in the last digits (99.97 % is not 100.0 %).
    static func percent(_ rate: Double) -> String { String(format: "%.2f %%", rate * 100) }
}
