import Synchronization

/// Each project's stored bundle bytes for the ingest quota. The store's figure is a sum over the
/// project's bundles, which grows with them, so it is read at most once per `maxAge` per project, by
/// one request at a time: when the figure is stale, the first upload to notice reads it again and the
/// others go on with the stale one meanwhile. (Every upload that found it stale used to read it: each
/// second, up to 64 concurrent sums over ~15,000 bundles queued on the database's readers, and the
/// open-loop row's p99 went from 12 to 60 ms.) Between reads, the bundles this instance stores are
/// added as they are stored, so a project cannot exceed its quota through this instance; through
/// others (scale-out), by what they store within `maxAge`.
final class ProjectUsage: Sendable {
    private struct Entry {
        var bytes: Int64
        var readAt: ContinuousClock.Instant
        var reading = false
    }

    private let store: any UsageStore
    private let maxAge: Duration
    private let cache = Mutex<[Int64: Entry]>([:])

    init(store: any UsageStore, maxAge: Duration = .seconds(1)) {
        self.store = store
        self.maxAge = maxAge
    }

    func bundleBytes(of projectID: Int64) async throws -> Int64 {
        let now = ContinuousClock.now
        let known: Int64? = cache.withLock { cache in
            guard var entry = cache[projectID] else { return nil }
            if now - entry.readAt < maxAge || entry.reading { return entry.bytes }
            entry.reading = true
            cache[projectID] = entry
            return nil
        }
        if let known { return known }
        do {
            let bytes = try await store.bundleBytes(projectID: projectID)
            cache.withLock { $0[projectID] = Entry(bytes: bytes, readAt: now) }
            return bytes
        } catch {
            cache.withLock { $0[projectID]?.reading = false }
            throw error
        }
    }

    /// A bundle of the project was stored: counted now, not at the next read.
    func stored(_ bytes: Int64, in projectID: Int64) {
        cache.withLock { $0[projectID]?.bytes += bytes }
    }
}
