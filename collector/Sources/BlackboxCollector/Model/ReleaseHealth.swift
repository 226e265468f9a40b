import Foundation

/// One app version's runs as the apps counted them (`SessionSummary` in bundle manifests).
public struct ReleaseHealth: Codable, Sendable, Equatable {
    public var version: String
    public var sessions: Int
    public var clean: Int
    public var crashed: Int
    public var hung: Int
    public var killed: Int
    /// Clean sessions of all (0…1): a crash, a hang that never recovered and a kill all count against it.
    public var crashFreeRate: Double
    /// Crash groups with occurrences in this version.
    public var groups: Int
    /// The first and last day (UTC) counts for it arrived.
    public var firstDay: Date
    public var lastDay: Date

    /// Most versions a project keeps counts for; runs of more are counted under "(other)".
    static let maxVersions = 1_000
}
