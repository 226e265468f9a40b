import Foundation

/// Every status decision, in plain Swift: each store reads a group's status in its transaction, asks
/// here, and writes back what it is told (with a history entry), so the stores cannot disagree.
enum GroupTriage {
    /// What a store knows about a group when a request changes it.
    struct Facts {
        var count: Int
        /// The versions the group was seen in (no "unknown" or "(other)").
        var versions: [String]
        var order: VersionOrder
    }

    struct Decision: Equatable {
        var status: GroupStatus
        var change: GroupStatusChange
    }

    /// Longest accepted version text in a request.
    static let maxVersionLength = 64

    /// The status after a person's request, or nil when nothing changes.
    static func apply(
        _ request: StatusRequest, to current: GroupStatus, facts: Facts, actor: String, at now: Date
    ) -> Decision? {
        var next = GroupStatus()
        next.changedAt = now
        let detail: String?
        switch request {
        case .open:
            next.state = .open
            detail = nil
        case .resolved(let version):
            next.state = .resolved
            next.resolvedIn = version
            detail = version.map { "resolved in \($0)" } ?? "resolved"
        case .resolvedInNextVersion:
            next.state = .resolved
            next.resolvedAfter = newest(facts.versions, order: facts.order, at: now)
            detail = "resolved in the version after \(next.resolvedAfter ?? "any seen so far")"
        case .ignored(let more, let until):
            next.state = .ignored
            next.ignoredUntilCount = more.map { facts.count + $0 }
            next.ignoredUntil = until
            detail = ignoreDetail(more: more, until: until)
        }
        var unchanged = next
        unchanged.changedAt = current.changedAt
        guard unchanged != current else { return nil }
        return Decision(
            status: next, change: .init(at: now, actor: actor, from: current.state, to: next.state, detail: detail))
    }

    /// The status after one more occurrence (already counted: `countAfter` includes it), or nil when
    /// it stays. `version` is the report's app version (nil: none given); `now` the time it arrived.
    static func afterOccurrence(
        _ current: GroupStatus, version: String?, countAfter: Int, order: VersionOrder, at now: Date
    ) -> Decision? {
        switch current.state {
        case .open, .regressed:
            return nil
        case .ignored:
            let countReached = current.ignoredUntilCount.map { countAfter >= $0 } ?? false
            let dateReached = current.ignoredUntil.map { now >= $0 } ?? false
            guard countReached || dateReached else { return nil }
            return reopen(current, to: .open, at: now, detail: countReached ? "ignored count reached" : "ignore ended")
        case .resolved:
            guard regresses(current, version: version, order: order) else { return nil }
            return reopen(current, to: .regressed, at: now, detail: "seen in \(version ?? "a version not given")")
        }
    }

    /// An occurrence of a version older than the resolution does not reopen the group (an old release
    /// still sending); nor does one that gives no version when the resolution names one (it cannot
    /// be shown to be new). An outright resolution is reopened by any occurrence.
    static func regresses(_ status: GroupStatus, version: String?, order: VersionOrder) -> Bool {
        let setAt = status.changedAt ?? .distantPast
        if let bound = status.resolvedIn {
            guard let version else { return false }
            return order.isAtLeast(version, bound, boundSetAt: setAt)
        }
        if let after = status.resolvedAfter {
            guard let version else { return false }
            return order.isAbove(version, after, boundSetAt: setAt)
        }
        return true
    }

    /// The newest of `versions`, by `order`.
    static func newest(_ versions: [String], order: VersionOrder, at now: Date) -> String? {
        versions.reduce(nil) { newest, version in
            guard let current = newest else { return version }
            return order.isAbove(version, current, boundSetAt: now) ? version : current
        }
    }

    private static func reopen(_ current: GroupStatus, to state: GroupStatus.State, at now: Date, detail: String)
        -> Decision
    {
        var next = GroupStatus()
        next.state = state
        next.changedAt = now
        return Decision(
            status: next, change: .init(at: now, actor: "collector", from: current.state, to: state, detail: detail))
    }

    private static func ignoreDetail(more: Int?, until: Date?) -> String {
        var parts: [String] = []
        if let more { parts.append("\(more) more occurrences") }
        if let until { parts.append(until.formatted(.iso8601)) }
        return parts.isEmpty ? "ignored" : "ignored until " + parts.joined(separator: " or ")
    }
}
