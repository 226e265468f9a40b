import Foundation

/// Release health: session counts per app version and day, added by ingest (`IngestPlan.sessions`),
/// and what senders lost before ingest (`IngestPlan.losses`).
public protocol ReleaseStore: Sendable {
    /// Most recently counted first.
    func releases(in scope: ProjectScope, page: Page) async throws -> [ReleaseHealth]
    func release(version: String, in scope: ProjectScope) async throws -> ReleaseHealth?
    /// Sessions and crash-free sessions of `version` per day, `days` days from `since` (a day start, UTC).
    func releaseDays(version: String, in scope: ProjectScope, since: Date, days: Int) async throws
        -> (sessions: [Int], clean: [Int])
    /// What senders dropped before it arrived, since `since`, per version, category and reason: the
    /// most recent first, at most `ReleaseLoss.maxListed`.
    func losses(in scope: ProjectScope, since: Date) async throws -> [ReleaseLoss]
}
