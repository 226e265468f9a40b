import Synchronization

/// Each project's stored bundle bytes for the ingest quota, read from the store at most once per
/// `maxAge` per project: a sum over the project's bundles on every upload would cost more than the
/// upload. Uploads received within that second are not counted yet, so a project may exceed its quota
/// by what it sends in a second (bounded by its upload slots and the body limit).
final class ProjectUsage: Sendable {
    private let store: any UsageStore
    private let maxAge: Duration
    private let cache = Mutex<[Int64: (bytes: Int64, readAt: ContinuousClock.Instant)]>([:])

    init(store: any UsageStore, maxAge: Duration = .seconds(1)) {
        self.store = store
        self.maxAge = maxAge
    }

    func bundleBytes(of projectID: Int64) async throws -> Int64 {
        let now = ContinuousClock.now
        if let cached = cache.withLock({ $0[projectID] }), now - cached.readAt < maxAge { return cached.bytes }
        let bytes = try await store.bundleBytes(projectID: projectID)
        cache.withLock { $0[projectID] = (bytes, now) }
        return bytes
    }
}
