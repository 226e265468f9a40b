import Foundation
import Logging
import ServiceLifecycle

/// Deletes bundles older than the retention period, then their blobs, and gives the space back
/// (SQLite incremental vacuum). Groups keep their counts and first/last seen.
struct RetentionService: Service {
    let store: any CollectorStore
    let blobs: BlobStore
    let committer: GroupCommitter
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
            let outcome = try await store.deleteBundles(receivedBefore: cutoff)
            // Blobs are named by content: the same bytes may belong to another project's bundle, or to
            // an upload being committed right now. Delete only what nothing references, checked again
            // while no batch is in flight.
            if !outcome.unreferencedBlobs.isEmpty {
                try await committer.withBatchesPaused {
                    let referenced = try await store.referencedBlobs(outcome.unreferencedBlobs)
                    for blob in outcome.unreferencedBlobs where !referenced.contains(blob) { blobs.remove(blob) }
                }
            }
            if outcome.deletedBundles > 0 {
                logger.info("retention: deleted \(outcome.deletedBundles) bundles received before \(cutoff)")
            }
            return outcome.deletedBundles
        } catch {
            logger.error("retention failed: \(error)")
            return 0
        }
    }
}
