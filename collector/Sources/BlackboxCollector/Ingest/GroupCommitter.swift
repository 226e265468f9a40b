import Foundation
import Logging
import ServiceLifecycle
import Synchronization

/// Group commit: ingest requests that arrive within a few milliseconds of each other are indexed in
/// one database transaction, so one fsync of the WAL acknowledges them all. Each request still
/// waits for its own bundle's outcome. If a batch fails, its bundles are retried one by one, so only
/// the offending one gets the error.
final class GroupCommitter: Service, Sendable {
    private typealias Waiter = (bundle: NewBundle, continuation: CheckedContinuation<IndexOutcome, any Error>)
    private let store: any CollectorStore
    private let window: Duration
    private let maxBatch = 256
    private let pending = Mutex<[Waiter]>([])
    private let wakeups: AsyncStream<Void>
    private let wake: AsyncStream<Void>.Continuation
    private let logger = Logger(label: "collector.commit")

    init(store: any CollectorStore, window: Duration) {
        self.store = store
        self.window = window
        (wakeups, wake) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    func submit(_ bundle: NewBundle) async throws -> IndexOutcome {
        try await withCheckedThrowingContinuation { continuation in
            pending.withLock { $0.append((bundle, continuation)) }
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
