import Foundation
import Logging
import ServiceLifecycle

/// Deletes bundles older than the retention period and each project's oldest past its quota, then
/// their blobs, and gives the space back (SQLite incremental vacuum). Groups keep their counts and
/// first/last seen.
struct RetentionService: Service {
    let store: any CollectorStore
    let blobs: any BlobStorage
    let committer: GroupCommitter
    /// Nil: bundles are kept however old.
    let days: Int?
    let bytesPerProject: Int64
    let interval: Duration
    let logger = Logger(label: "collector.retention")

    /// A pass at start and every `interval`; graceful shutdown ends the wait between passes (the
    /// pass in progress, one transaction and its blobs, completes).
    func run() async throws {
        await WorkerLoop(interval: interval).run { await runOnce() }
    }

    @discardableResult
    func runOnce(now: Date = Date()) async -> Int {
        let cutoff = days.map { now.addingTimeInterval(-Double($0) * 86_400) } ?? .distantPast
        do {
            // Down to 90 % of the quota: ingest refuses at the quota, so a project that reached it has
            // room again after a pass, not only once a single byte is freed.
            let outcome = try await store.deleteBundles(
                receivedBefore: cutoff, beyondBytesPerProject: bytesPerProject / 10 * 9)
            // Blobs are named by content: the same bytes may belong to another project's bundle, or to
            // an upload being committed right now, here or on another instance. Each goes aside first,
            // then the database is asked again: still unreferenced, it is deleted; else it goes back
            // (`DirectoryBlobStore`, "Deleting blobs safely"). This instance's batches also wait meanwhile.
            if !outcome.unreferencedBlobs.isEmpty {
                try await committer.withBatchesPaused {
                    try await blobs.deleteUnreferenced(outcome.unreferencedBlobs, referenced: store.referencedBlobs)
                }
            }
            if outcome.deletedBundles > 0 {
                logger.info(
                    "retention: deleted \(outcome.deletedBundles) bundles received before \(cutoff) or past a project's \(bytesPerProject) bytes"
                )
            }
            return outcome.deletedBundles
        } catch {
            logger.error("retention failed: \(error)")
            return 0
        }
    }
}
