import Foundation

/// Group states and their history. Decisions are `GroupTriage`'s; a store reads what they need in
/// its transaction and writes what they return. (Occurrences reopen groups during ingest, in
/// `BundleIndex.apply`.)
public protocol TriageStore: Sendable {
    /// Applies `request` to the group in one transaction, recording the change; the group as it is
    /// afterwards, or nil when the project has no such group.
    func changeStatus(groupID: Int64, in scope: ProjectScope, to request: StatusRequest, actor: String, at: Date)
        async throws -> CrashGroup?
    /// Oldest first.
    func statusHistory(groupID: Int64, in scope: ProjectScope) async throws -> [GroupStatusChange]
}
