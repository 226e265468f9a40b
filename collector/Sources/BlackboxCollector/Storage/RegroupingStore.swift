import Foundation

/// Where the regrouping service finds groups made under an older signature version, reads their
/// reports and applies a `RegroupPlan`.
public protocol RegroupingStore: Sendable {
    /// Ids of groups with a signature version older than `CrashSignature.version`, past `groupID`,
    /// lowest first.
    func groupsWithOlderSignatures(after groupID: Int64, limit: Int) async throws -> [Int64]
    /// The ids of every report of a group, lowest first.
    func reportIDs(inGroup groupID: Int64) async throws -> [Int64]
    /// Stored report JSON by report id (missing ids left out).
    func reportJSON(ids: [Int64]) async throws -> [Int64: Data]
    /// Applies a plan in one transaction; false (nothing written) when the group changed since it
    /// was planned, or already has the current version.
    func regroup(_ plan: RegroupPlan) async throws -> Bool
}
