import Foundation

/// Release health: session counts per app version and day, added by ingest (`IngestPlan.sessions`).
public protocol ReleaseStore: Sendable {
    /// Most recently counted first.
    func releases(in scope: ProjectScope, page: Page) async throws -> [ReleaseHealth]
    func release(version: String, in scope: ProjectScope) async throws -> ReleaseHealth?
    /// Sessions and crash-free sessions of `version` per day, `days` days from `since` (a day start, UTC).
    func releaseDays(version: String, in scope: ProjectScope, since: Date, days: Int) async throws
        -> (sessions: [Int], clean: [Int])
}
