import Foundation
import Logging
import NIOPosix
import ServiceLifecycle
import Synchronization

/// Group commit: ingest requests that arrive within a few milliseconds of each other are made durable
/// and indexed together. For a batch: the uploaded files are linked into `blobs/` and one flush of the
/// file system makes their contents and names durable (`DirectoryBlobStore.commit`), then one database
/// transaction (one fsync of the WAL) indexes them. So the cost of durability is paid per batch, not
/// per upload. Each request still waits for its own bundle's outcome. If indexing a batch fails, its
/// bundles are retried one by one, so only the offending one gets the error.
///
/// Bundles wait in two lanes by how much a batch of them costs to store. A small bundle (the usual
/// 10 KB of logs) never waits behind a batch of large ones (30 MiB of crash reports, which take
/// seconds to flush and to write into the database): each lane has its own batches in flight, its
/// own threads for the disk flush (never queued behind bundle inspections on the shared pool), and a
/// small batch of small bundles is made durable by an fsync per file instead of a flush of the whole
/// file system (which would also wait for every large upload being written meanwhile). Only the
/// database transactions themselves take turns, and a large batch holds a bounded number of bytes.
///
/// Nothing depends on batches finishing in order: a bundle is referenced only by its own batch's
/// transaction, which starts after its own flush, and transactions are serialized by the store.
final class GroupCommitter: Service, Sendable {
    private typealias Waiter = (
        plan: IngestPlan, temporaryPath: String, continuation: CheckedContinuation<IndexOutcome, any Error>
    )

    enum Lane: CaseIterable, Sendable {
        case small, large

        /// Bundle bytes plus the reports' stored JSON: what a batch writes to disk and database.
        static let largeFromBytes = 1 << 20

        init(_ plan: IngestPlan) {
            self = plan.storedBytes >= Self.largeFromBytes ? .large : .small
        }

        var maxBatchesInFlight: Int { self == .small ? 2 : 1 }
        var maxBatchCount: Int { 256 }
        /// A batch takes at least one bundle, and more only while under this many stored bytes.
        var maxBatchBytes: Int { self == .small ? .max : 64 << 20 }
    }

    private struct Queue {
        var pending: [Waiter] = []
        var batchesInFlight = 0
    }

    private struct State {
        var small = Queue()
        var large = Queue()
        /// While above zero no batch starts (see `withBatchesPaused`).
        var pauses = 0

        subscript(lane: Lane) -> Queue {
            get { lane == .small ? small : large }
            set { if lane == .small { small = newValue } else { large = newValue } }
        }

        var batchesInFlight: Int { small.batchesInFlight + large.batchesInFlight }
    }

    /// Up to this many small bundles in a batch are flushed file by file (an fsync of the file and one
    /// of its directory, about 0.4 ms each on this disk); more are cheaper with one `syncfs`, and under
    /// the load that makes batches that big, nothing large is usually being written beside them.
    static let fileByFileFlushLimit = 4
    private let store: any BundleIndex
    private let blobs: any BlobStorage
    private let window: Duration
    private let state = Mutex(State())
    private let wakeups: AsyncStream<Void>
    private let wake: AsyncStream<Void>.Continuation
    private let logger = Logger(label: "collector.commit")
    /// A thread for each batch that can be in flight: flushes wait on the disk, never on CPU-bound
    /// inspections.
    static let flushPool: NIOThreadPool = {
        let pool = NIOThreadPool(numberOfThreads: Lane.allCases.reduce(0) { $0 + $1.maxBatchesInFlight })
        pool.start()
        return pool
    }()

    init(store: any BundleIndex, blobs: any BlobStorage, window: Duration) {
        self.store = store
        self.blobs = blobs
        self.window = window
        (wakeups, wake) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    /// `temporaryPath` holds the bundle's bytes (closed, not yet fsynced); the committer moves it.
    func submit(_ plan: IngestPlan, temporaryPath: String) async throws -> IndexOutcome {
        try await withCheckedThrowingContinuation { continuation in
            state.withLock { $0[Lane(plan)].pending.append((plan, temporaryPath, continuation)) }
            wake.yield()
        }
    }

    func run() async throws {
        await withGracefulShutdownHandler {
            await withDiscardingTaskGroup { group in
                for await _ in wakeups {
                    if window > .zero { try? await Task.sleep(for: window) }
                    for lane in Lane.allCases {
                        while let batch = takeBatch(from: lane, respectingLimit: true) {
                            group.addTask {
                                await self.commit(batch, lane: lane)
                                self.state.withLock { $0[lane].batchesInFlight -= 1 }
                                // Whatever queued up meanwhile goes next.
                                self.wake.yield()
                            }
                        }
                    }
                }
            }
        } onGracefulShutdown: { [wake] in
            wake.finish()
        }
        // Requests that arrived as the server was stopping still get their answer.
        for lane in Lane.allCases {
            while let batch = takeBatch(from: lane, respectingLimit: false) { await commit(batch, lane: lane) }
        }
    }

    private func takeBatch(from lane: Lane, respectingLimit: Bool) -> [Waiter]? {
        state.withLock { state -> [Waiter]? in
            guard !state[lane].pending.isEmpty,
                !respectingLimit || (state[lane].batchesInFlight < lane.maxBatchesInFlight && state.pauses == 0)
            else {
                return nil
            }
            var count = 0
            var bytes = 0
            for waiter in state[lane].pending.prefix(lane.maxBatchCount) {
                bytes += waiter.plan.storedBytes
                if count > 0 && bytes > lane.maxBatchBytes { break }
                count += 1
            }
            let batch = Array(state[lane].pending.prefix(count))
            state[lane].pending.removeFirst(count)
            state[lane].batchesInFlight += 1
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

    private func commit(_ batch: [Waiter], lane: Lane) async {
        let blobs = self.blobs
        let paths = batch.map { ($0.temporaryPath, $0.plan.bundle.blob, $0.plan.bundle.sha256, $0.plan.bundle.size) }
        let fileByFile = lane == .small && batch.count <= Self.fileByFileFlushLimit
        do {
            try await blobs.commit(paths, fileByFile: fileByFile)
        } catch {
            logger.error("cannot make \(batch.count) uploads durable: \(error)")
            for waiter in batch {
                unlink(waiter.temporaryPath)
                waiter.continuation.resume(throwing: error)
            }
            return
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
        // An upload whose blob existed already kept its copy as a standby: once its transaction is
        // done, the standby replaces a blob that retention removed meanwhile (`DirectoryBlobStore`,
        // "Deleting blobs safely").
        for waiter in batch {
            await blobs.releaseStandby(temporaryPath: waiter.temporaryPath, name: waiter.plan.bundle.blob)
        }
    }
}
