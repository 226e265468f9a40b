import BlackboxFormat
import Foundation

/// A report with the signature of the current version, and what counting it in a group needs.
public struct RegroupedReport: Sendable, Equatable {
    public var id: Int64
    public var signature: CrashSignature.Result
    public var kind: String
    public var occurredAt: Date
    public var versionKey: String
    public var hostKey: String
}

extension RegroupedReport {
    init(id: Int64, report: CrashReport) {
        self.init(
            id: id, signature: CrashSignature.compute(report), kind: report.kind.rawValue,
            occurredAt: report.process.crashTime, versionKey: report.versionKey,
            hostKey: report.hostKey)
    }
}

/// How one group made under an older signature version takes the current one (docs/collector.md,
/// "Grouping"): decided from its reports, applied by the store in one transaction.
///
/// The group takes the signature most of its reports have now (the latest report's, on a tie), and
/// keeps its id, triage state, notes and links. When a group of that signature already exists (the
/// debug build's group, found before the release build's), the group's occurrences move into it and
/// the emptied group's page says where they went. Reports whose signature differs from the group's
/// move one by one to the groups of theirs.
public struct RegroupPlan: Sendable, Equatable {
    public var groupID: Int64
    /// Every report of the group when the plan was made: the store applies the plan only if the group
    /// still has exactly these (else a report arrived or moved meanwhile, and the next turn plans anew).
    public var reportIDs: [Int64]
    /// The reports that could be read, with their current signatures.
    public var reports: [RegroupedReport]

    /// The signature the group takes; nil when none of its reports could be read (retention deleted
    /// them, or none decodes): the group then keeps its old signature.
    public var target: CrashSignature.Result? {
        var tally: [String: (count: Int, latest: Date, signature: CrashSignature.Result)] = [:]
        for report in reports {
            let seen = tally[report.signature.hash]
            tally[report.signature.hash] = (
                (seen?.count ?? 0) + 1, max(seen?.latest ?? .distantPast, report.occurredAt), report.signature
            )
        }
        return tally.values.max { ($0.count, $0.latest) < ($1.count, $1.latest) }?.signature
    }
}
