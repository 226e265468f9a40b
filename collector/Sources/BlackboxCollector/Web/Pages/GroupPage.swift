import BlackboxFormat
import Foundation
import Hummingbird

/// `/groups/:id`: one crash group, its state and the forms that change it, its trends, its latest
/// report's stack and its occurrences; `POST /groups/:id/state` changes the state.
struct GroupPage: PageModel {
    static let template = "group"

    /// The state line and the forms that change it.
    struct Status: Encodable {
        let state: String
        let detail: String
        let groupID: Int64
        let csrf: String
        let isOpen: Bool
        let changedAt: String

        init(_ group: CrashGroup, csrf: String) {
            switch group.state {
            case .resolved:
                detail =
                    group.resolvedIn.map { "in \($0)" } ?? group.resolvedAfter.map { "in the version after \($0)" }
                    ?? "outright: any occurrence reopens it"
            case .ignored:
                let until = [
                    group.ignoredUntilCount.map { "until it reaches \($0) occurrences" },
                    group.ignoredUntil.map { "until \(iso($0))" },
                ].compactMap { $0 }.joined(separator: " or ")
                detail = until.isEmpty ? "forever" : until
            case .open, .regressed:
                detail = ""
            }
            state = group.state.rawValue
            groupID = group.id
            self.csrf = csrf
            isOpen = group.state == .open
            // A group never triaged has been open since it was first seen.
            changedAt = iso(group.stateChangedAt ?? group.firstSeen)
        }
    }

    /// Trend charts (SVG): the last 24 hours by hour, the last 30 days by day, and by version.
    struct Charts: Encodable {
        let hours: String
        let days: String
        let versions: String
    }

    struct Move: Encodable {
        let toGroupID: Int64
        let count: Int
        let plural: Bool
    }

    struct Change: Encodable {
        let at: String
        let actor: String
        let from: String
        let to: String
        let detail: String
    }

    /// The latest report: nil where the template would show an empty block.
    struct Latest: Encodable {
        let reportID: Int64
        let stack: String
        let reason: String?
        let fatalMessage: String?
    }

    struct Occurrence: Encodable {
        let reportID: Int64
        let bundleID: Int64
        let occurredAt: String
        let appVersion: String
        let host: String
        let reason: String
    }

    let title: String
    let group: CrashGroup
    let firstSeen: String
    let lastSeen: String
    let versions: String
    let hosts: String
    let signatureText: String
    let status: Status
    let charts: Charts
    let moves: [Move]
    let latest: Latest?
    let history: [Change]
    let occurrences: [Occurrence]

    static func routes(store: any CollectorStore, pages: PageRenderer) -> RouteCollection<AuthenticatedContext> {
        let routes = RouteCollection(context: AuthenticatedContext.self)
        routes.get("groups/:id") { request, context in
            let id = try context.id()
            guard let group = try await store.group(id: id, in: context.scope) else { return pages.notFound() }
            let scope = context.scope
            var latest: StoredReport? = nil
            if let latestID = group.latestReportID { latest = try await store.report(id: latestID, in: scope) }
            let occurrences = try await store.occurrences(groupID: id, in: scope, page: request.page)
            return pages.render(
                GroupPage(
                    title: group.title, group: group, firstSeen: iso(group.firstSeen), lastSeen: iso(group.lastSeen),
                    versions: countSummary(group.versions), hosts: countSummary(group.hosts),
                    signatureText: latest.map { CrashSignature.compute($0.report).text } ?? group.signature,
                    status: Status(group, csrf: WebSessions.formToken(for: request) ?? ""),
                    charts: try await charts(of: group, store: store, in: scope),
                    moves: try await store.moves(fromGroup: id, in: scope).map {
                        Move(toGroupID: $0.toGroupID, count: $0.count, plural: $0.count != 1)
                    },
                    latest: latest.map { stored in
                        Latest(
                            reportID: stored.id, stack: stackText(stored.report),
                            reason: stored.report.reason.flatMap { $0.isEmpty ? nil : $0 },
                            fatalMessage: stored.report.fatalMessage.flatMap { $0.isEmpty ? nil : $0 })
                    },
                    history: try await store.statusHistory(groupID: id, in: scope).reversed().map {
                        Change(
                            at: iso($0.at), actor: $0.actor, from: $0.from.rawValue, to: $0.to.rawValue,
                            detail: $0.detail ?? "")
                    },
                    occurrences: occurrences.map {
                        Occurrence(
                            reportID: $0.reportID, bundleID: $0.bundleID, occurredAt: iso($0.occurredAt),
                            appVersion: $0.appVersion ?? "", host: $0.host ?? "", reason: $0.reason ?? "")
                    }))
        }
        routes.post("groups/:id/state") { request, context in
            let id = try context.id()
            let form = try await WebForm.read(request)
            guard WebSessions.isGenuineForm(request, token: form["csrf"]) else {
                return pages.message("Not changed", WebForm.expired, status: .forbidden)
            }
            let statusRequest: StatusRequest
            do {
                statusRequest = try StatusRequest(form: form)
            } catch let error as APIError {
                return pages.message("Not changed", "\(error.message).", status: .badRequest)
            }
            guard
                try await store.changeStatus(
                    groupID: id, in: context.scope, to: statusRequest, actor: "admin:\(context.key.prefix)", at: Date())
                    != nil
            else { return pages.notFound() }
            return Response(status: .seeOther, headers: [.location: "/groups/\(id)"])
        }
        return routes
    }

    private static func charts(of group: CrashGroup, store: any CollectorStore, in scope: ProjectScope) async throws
        -> Charts
    {
        let trend = try await GroupTrend(groupID: group.id, store: store, in: scope)
        return Charts(
            hours: SVGChart(bars: Trends.bars(trend.byHour, labels: trend.hours.labels), name: "chart-hours")
                .render(labelEvery: 3, caption: "Occurrences in the last 24 hours, by hour"),
            days: SVGChart(bars: Trends.bars(trend.byDay, labels: trend.days.labels), name: "chart-days")
                .render(labelEvery: 5, caption: "Occurrences in the last 30 days, by day"),
            versions: SVGChart(bars: Trends.versionBars(group.versions, limit: 12), name: "chart-versions")
                .render(caption: "Occurrences by app version"))
    }

    /// The first 30 frames, one line each, inlined functions outermost last.
    private static func stackText(_ report: CrashReport) -> String {
        report.frames.prefix(30).map { frame in
            let name = frame.symbols.map(\.function).reversed().joined(separator: " → ")
            return "\(frame.index)  \(frame.address)  \(name.isEmpty ? (frame.imageOffset ?? "?") : name)"
        }.joined(separator: "\n")
    }
}
