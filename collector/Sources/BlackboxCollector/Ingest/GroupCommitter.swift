import Foundation
import Logging
import NIOPosix
import ServiceLifecycle
import Synchronization

/// Group commit: ingest requests that arrive within a few milliseconds of each other are made durable
/// and indexed together. For a batch: the uploaded files are linked into `blobs/` and one flush of the
/// file system makes their contents and names durable (`BlobStore.commit`), then one database
/// transaction (one fsync of the WAL) indexes them. So the cost of durability is paid per batch, not
/// per upload. Each request still waits for its own bundle's outcome. If indexing a batch fails, its
/// bundles are retried one by one, so only the offending one gets the error.
///
/// Up to `maxBatchesInFlight` batches overlap: while one waits for the disk flush, the one before it
/// is in its database transaction. Nothing depends on batches finishing in order: a bundle is
/// referenced only by its own batch's transaction, which starts after its own flush, and transactions
/// are serialized by the store.
final class GroupCommitter: Service, Sendable {
    private typealias Waiter = (
        plan: IngestPlan, temporaryPath: String, continuation: CheckedContinuation<IndexOutcome, any Error>
    )
    private struct State {
        var pending: [Waiter] = []
        var batchesInFlight = 0
        /// While above zero no batch starts (see `withBatchesPaused`).
        var pauses = 0
    }
    private let store: any BundleIndex
    private let blobs: BlobStore
    private let window: Duration
    private let maxBatch = 256
    private let maxBatchesInFlight = 2
    private let state = Mutex(State())
    private let wakeups: AsyncStream<Void>
    private let wake: AsyncStream<Void>.Continuation
    private let logger = Logger(label: "collector.commit")

    init(store: any BundleIndex, blobs: BlobStore, window: Duration) {
        self.store = store
        self.blobs = blobs
        self.window = window
        (wakeups, wake) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    /// `temporaryPath` holds the bundle's bytes (closed, not yet fsynced); the committer moves it.
    func submit(_ plan: IngestPlan, temporaryPath: String) async throws -> IndexOutcome {
        try await withCheckedThrowingContinuation { continuation in
            state.withLock { $0.pending.append((plan, temporaryPath, continuation)) }
            wake.yield()
        }
    }

    func run() async throws {
        await withGracefulShutdownHandler {
            await withDiscardingTaskGroup { group in
                for await _ in wakeups {
                    if window > .zero { try? await Task.sleep(for: window) }
                    while let batch = takeBatch(respectingLimit: true) {
                        group.addTask {
                            await self.commit(batch)
                            self.state.withLock { $0.batchesInFlight -= 1 }
                            // Whatever queued up meanwhile goes next.
                            self.wake.yield()
                        }
                    }
                }
            }
        } onGracefulShutdown: { [wake] in
            wake.finish()
        }
        // Requests that arrived as the server was stopping still get their answer.
        while let batch = takeBatch(respectingLimit: false) { await commit(batch) }
    }

    private func takeBatch(respectingLimit: Bool) -> [Waiter]? {
        state.withLock { state in
            guard !state.pending.isEmpty,
                !respectingLimit || (state.batchesInFlight < maxBatchesInFlight && state.pauses == 0)
            else {
                return nil
            }
            let batch = Array(state.pending.prefix(maxBatch))
            state.pending.removeFirst(batch.count)
            state.batchesInFlight += 1
            return batch
        }
    }

    /// Runs `body` while no batch links blobs or indexes: retention deletes a blob only if no bundle
    /// references it, and a batch in flight may be about to reference an existing blob of the same
    /// bytes (it links nothing new then). Batches wait meanwhile; `body` must be short.
    func withBatchesPaused<T: Sendable>(_ body: () async throws -> T) async rethrows -> T {
        state.withLock { $0.pauses += 1 }
        defer {
            state.withLock { $0.pauses -= 1 }
            wake.yield()
        }
        while state.withLock({ $0.batchesInFlight }) > 0 { try? await Task.sleep(for: .milliseconds(2)) }
        return try await body()
    }

    private func commit(_ batch: [Waiter]) async {
        let blobs = self.blobs
        let paths = batch.map { ($0.temporaryPath, $0.plan.bundle.sha256, $0.plan.bundle.size) }
        do {
            try await NIOThreadPool.singleton.runIfActive { try blobs.commit(paths) }
        } catch {
            logger.error("cannot make \(batch.count) uploads durable: \(error)")
            for waiter in batch {
                unlink(waiter.temporaryPath)
                waiter.continuation.resume(throwing: error)
            }
            return
        }
        // An upload whose blob existed already kept its copy as a standby: once its transaction is
        // done, the standby replaces a blob that retention removed meanwhile (BlobStore).
        defer {
            for waiter in batch {
                blobs.releaseStandby(temporaryPath: waiter.temporaryPath, sha256: waiter.plan.bundle.sha256)
            }
        }
        do {
            let outcomes = try await store.apply(batch.map(\.plan))
            for (waiter, outcome) in zip(batch, outcomes) { waiter.continuation.resume(returning: outcome) }
        } catch {
            logger.warning("group commit of \(batch.count) bundles failed (\(error)); retrying one by one")
            for waiter in batch {
                do {
                    let outcome = try await store.apply([waiter.plan])
                    waiter.continuation.resume(returning: outcome[0])
                } catch {
                    waiter.continuation.resume(throwing: error)
                }
            }
        }
    }
}
