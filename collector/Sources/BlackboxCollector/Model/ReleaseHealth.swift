import Foundation

/// One app version's runs as the apps counted them (`SessionSummary` in bundle manifests).
public struct ReleaseHealth: Encodable, Sendable, Equatable {
    public var version: String
    public var sessions: Int
    public var clean: Int
    public var crashed: Int
    public var hung: Int
    /// Runs that ended without a report: killed (SIGKILL, the OOM killer, a power loss) or crashed
    /// where no handler could run. Sentry's `abnormal`; the API names it both ways.
    public var killed: Int
    public var abnormal: Int { killed }
    /// Clean sessions of all (0…1): a crash, a hang that never recovered and an abnormal end all count against it.
    public var crashFreeRate: Double
    /// Crash groups with occurrences in this version.
    public var groups: Int
    /// The first and last day (UTC) counts for it arrived.
    public var firstDay: Date
    public var lastDay: Date

    enum CodingKeys: String, CodingKey {
        case version, sessions, clean, crashed, hung, killed, abnormal, crashFreeRate, groups, firstDay, lastDay
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(version, forKey: .version)
        try container.encode(sessions, forKey: .sessions)
        try container.encode(clean, forKey: .clean)
        try container.encode(crashed, forKey: .crashed)
        try container.encode(hung, forKey: .hung)
        try container.encode(killed, forKey: .killed)
        try container.encode(abnormal, forKey: .abnormal)
        try container.encode(crashFreeRate, forKey: .crashFreeRate)
        try container.encode(groups, forKey: .groups)
        try container.encode(firstDay, forKey: .firstDay)
        try container.encode(lastDay, forKey: .lastDay)
    }

    /// Most versions a project keeps counts for; runs of more are counted under "(other)".
    static let maxVersions = 1_000
}
