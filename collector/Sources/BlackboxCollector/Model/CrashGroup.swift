import Foundation

/// Occurrences of one problem, grouped by `CrashSignature`.
public struct CrashGroup: Codable, Sendable, Equatable {
    /// Distinct versions (and hosts) counted by name per group; occurrences from further ones are
    /// counted under `otherValues`, so that a client inventing versions cannot grow a group's page
    /// without bound (10 uploads once gave one group 19,000).
    public static let maxTrackedValues = 100
    public static let otherValues = "(other)"

    public var id: Int64
    public var projectID: Int64
    public var signature: String
    public var signatureVersion: Int
    public var kind: String
    public var title: String
    public var count: Int
    public var firstSeen: Date
    public var lastSeen: Date
    public var latestReportID: Int64?
    public var versions: [String: Int]
    public var hosts: [String: Int]
    /// Where the team stands on it (`GroupStatus`; flat here, as the API shows it).
    public var state: GroupStatus.State = .open
    public var resolvedIn: String?
    public var resolvedAfter: String?
    public var ignoredUntilCount: Int?
    public var ignoredUntil: Date?
    public var stateChangedAt: Date?

    public var status: GroupStatus {
        get {
            var status = GroupStatus()
            status.state = state
            status.resolvedIn = resolvedIn
            status.resolvedAfter = resolvedAfter
            status.ignoredUntilCount = ignoredUntilCount
            status.ignoredUntil = ignoredUntil
            status.changedAt = stateChangedAt
            return status
        }
        set {
            state = newValue.state
            resolvedIn = newValue.resolvedIn
            resolvedAfter = newValue.resolvedAfter
            ignoredUntilCount = newValue.ignoredUntilCount
            ignoredUntil = newValue.ignoredUntil
            stateChangedAt = newValue.changedAt
        }
    }
}
