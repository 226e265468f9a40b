import Foundation
import Logging
import ServiceLifecycle

/// Deletes bundles older than the retention period, then their blobs, and gives the space back
/// (SQLite incremental vacuum). Groups keep their counts and first/last seen.
struct RetentionService: Service {
    let store: any CollectorStore
    let blobs: BlobStore
    let days: Int
    let interval: Duration
    let logger = Logger(label: "collector.retention")

    func run() async throws {
        // Graceful shutdown cancels the wait between runs (a plain sleep would hold shutdown for an hour).
        do {
            try await cancelWhenGracefulShutdown {
                while true {
                    await runOnce()
                    try await Task.sleep(for: interval)
                }
            }
        } catch is CancellationError {
            return
        }
    }

    @discardableResult
    func runOnce(now: Date = Date()) async -> Int {
        let cutoff = now.addingTimeInterval(-Double(days) * 86_400)
        do {
            let removed = try await store.deleteBundles(receivedBefore: cutoff)
            for blob in removed { blobs.remove(blob) }
            if !removed.isEmpty { logger.info("retention: deleted \(removed.count) bundles received before \(cutoff)") }
            return removed.count
        } catch {
            logger.error("retention failed: \(error)")
            return 0
        }
    }
}
