import Foundation
import Logging
import NIOPosix
import ServiceLifecycle
import Synchronization

/// Group commit: ingest requests that arrive within a few milliseconds of each other are made durable
/// and indexed together. For a batch: one flush of the file system for all the uploaded files, the
/// renames into `blobs/`, one more flush for the renames, then one database transaction (one fsync
/// of the WAL). So the cost of durability is paid per batch, not per upload. Each request still waits
/// for its own bundle's outcome. If indexing a batch fails, its bundles are retried one by one, so
/// only the offending one gets the error.
final class GroupCommitter: Service, Sendable {
    private typealias Waiter = (
        bundle: NewBundle, temporaryPath: String, continuation: CheckedContinuation<IndexOutcome, any Error>
    )
    private let store: any CollectorStore
    private let blobs: BlobStore
    private let window: Duration
    private let maxBatch = 256
    private let pending = Mutex<[Waiter]>([])
    private let wakeups: AsyncStream<Void>
    private let wake: AsyncStream<Void>.Continuation
    private let logger = Logger(label: "collector.commit")

    init(store: any CollectorStore, blobs: BlobStore, window: Duration) {
        self.store = store
        self.blobs = blobs
        self.window = window
        (wakeups, wake) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    /// `temporaryPath` holds the bundle's bytes (closed, not yet fsynced); the committer moves it.
    func submit(_ bundle: NewBundle, temporaryPath: String) async throws -> IndexOutcome {
        try await withCheckedThrowingContinuation { continuation in
            pending.withLock { $0.append((bundle, temporaryPath, continuation)) }
            wake.yield()
        }
    }

    func run() async throws {
        await withGracefulShutdownHandler {
            for await _ in wakeups {
                if window > .zero { try? await Task.sleep(for: window) }
                await drain()
            }
        } onGracefulShutdown: { [wake] in
            wake.finish()
        }
        await drain()
    }

    private func drain() async {
        while true {
            let batch = pending.withLock { waiting -> [Waiter] in
                let batch = Array(waiting.prefix(maxBatch))
                waiting.removeFirst(batch.count)
                return batch
            }
            if batch.isEmpty { return }
            let blobs = self.blobs
            let paths = batch.map { ($0.temporaryPath, $0.bundle.sha256) }
            do {
                try await NIOThreadPool.singleton.runIfActive { try blobs.commit(paths) }
            } catch {
                logger.error("cannot make \(batch.count) uploads durable: \(error)")
                for waiter in batch {
                    unlink(waiter.temporaryPath)
                    waiter.continuation.resume(throwing: error)
                }
                continue
            }
            do {
                let outcomes = try await store.index(batch.map(\.bundle))
                for (waiter, outcome) in zip(batch, outcomes) { waiter.continuation.resume(returning: outcome) }
            } catch {
                logger.warning("group commit of \(batch.count) bundles failed (\(error)); retrying one by one")
                for waiter in batch {
                    do {
                        let outcome = try await store.index([waiter.bundle])
                        waiter.continuation.resume(returning: outcome[0])
                    } catch {
                        waiter.continuation.resume(throwing: error)
                    }
                }
            }
        }
    }
}
