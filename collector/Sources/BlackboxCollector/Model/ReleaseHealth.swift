import BlackboxFormat
import Foundation

/// One app version's runs as the apps counted them (`SessionSummary` in bundle manifests), and the
/// requests they served (counted by Blackbox's framework integrations, and Sentry's server SDKs'
/// session aggregates).
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
    public var requests: RequestCounts
    /// Requests a crash did not cut short, of all (0…1); nil without requests.
    public var crashFreeRequestRate: Double? {
        requests.total == 0 ? nil : Double(requests.total - requests.crashed) / Double(requests.total)
    }
    /// Requests that neither failed as a server error nor crashed, of all (0…1); nil without requests.
    public var errorFreeRequestRate: Double? {
        requests.total == 0
            ? nil
            : Double(max(0, requests.total - requests.serverErrors - requests.crashed)) / Double(requests.total)
    }
    /// Requests that failed as a server error or crashed, of all (0…1); 0 without requests.
    var failureRate: Double {
        requests.total == 0
            ? 0 : Double(min(requests.total, requests.serverErrors + requests.crashed)) / Double(requests.total)
    }
    /// Crash groups with occurrences in this version.
    public var groups: Int
    /// The first and last day (UTC) counts for it arrived.
    public var firstDay: Date
    public var lastDay: Date

    enum CodingKeys: String, CodingKey {
        case version, sessions, clean, crashed, hung, killed, abnormal, crashFreeRate, requests, crashFreeRequestRate
        case errorFreeRequestRate, groups, firstDay, lastDay
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
        try container.encode(requests, forKey: .requests)
        try container.encodeIfPresent(crashFreeRequestRate, forKey: .crashFreeRequestRate)
        try container.encodeIfPresent(errorFreeRequestRate, forKey: .errorFreeRequestRate)
        try container.encode(groups, forKey: .groups)
        try container.encode(firstDay, forKey: .firstDay)
        try container.encode(lastDay, forKey: .lastDay)
    }

    /// Most versions a project keeps counts for; runs of more are counted under "(other)".
    static let maxVersions = 1_000
}
