import Foundation

/// Where a crash group stands for the team: open, resolved (in a version, in the next version, or
/// outright), ignored (forever, for N more occurrences, or until a date), or regressed (resolved,
/// then seen again in a version at or above the resolution). `GroupTriage` decides every change.
public struct GroupStatus: Codable, Sendable, Equatable {
    public enum State: String, Codable, Sendable, CaseIterable {
        case open, resolved, ignored, regressed
    }

    public var state: State = .open
    /// Resolved in this version: an occurrence from it or a later one regresses the group.
    public var resolvedIn: String?
    /// Resolved "in the next version": the newest version seen when it was resolved; only a later
    /// version regresses it.
    public var resolvedAfter: String?
    /// Ignored until the group's count reaches this.
    public var ignoredUntilCount: Int?
    /// Ignored until this moment.
    public var ignoredUntil: Date?
    /// When the state last changed (nil: never).
    public var changedAt: Date?

    public init() {}

    static let open = GroupStatus()
}

/// One entry of a group's history: who changed what, when.
public struct GroupStatusChange: Codable, Sendable, Equatable {
    public var at: Date
    /// `admin:<key prefix>` for the API and the web UI, `collector` for a change an occurrence made.
    public var actor: String
    public var from: GroupStatus.State
    public var to: GroupStatus.State
    /// What else changed, in words ("resolved in 1.2", "ignored until 3 more occurrences", "seen in 1.2.1").
    public var detail: String?
}

/// A change someone asks for (the API's `PATCH`, the group page's buttons).
public enum StatusRequest: Sendable, Equatable {
    case open
    /// Resolved in `version`, or, when nil, outright: any further occurrence regresses it.
    case resolved(in: String?)
    case resolvedInNextVersion
    case ignored(moreOccurrences: Int?, until: Date?)
}
