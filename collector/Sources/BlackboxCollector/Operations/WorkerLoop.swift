import ServiceLifecycle
import Synchronization

/// The background services' one loop: a turn of work at start, whenever woken (an upload arrived,
/// symbols came) and every `interval` (work another instance queued, retries that came due), until
/// graceful shutdown; swift-otel's batch processor has this shape (timer ticks merged with explicit
/// ones). Shutdown does not cancel the service's task: a turn in progress sees `isStopping`, stops
/// between two pieces of work and leaves the rest queued for the next run.
final class WorkerLoop: Sendable {
    private let interval: Duration?
    private let wakeups: AsyncStream<Void>
    private let continuation: AsyncStream<Void>.Continuation
    private let stopping = Atomic<Bool>(false)

    /// `interval` nil: turns only when woken.
    init(interval: Duration?) {
        self.interval = interval
        // Wake-ups while a turn runs fold into one more turn after it.
        (wakeups, continuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    func wake() { continuation.yield() }

    var isStopping: Bool { Task.isCancelled || stopping.load(ordering: .relaxed) }

    /// Runs turns until graceful shutdown; `onStop` runs when shutdown begins (to interrupt a turn's
    /// slow work, such as a symbolizer child).
    func run(onStop: @escaping @Sendable () -> Void = {}, _ turn: @Sendable () async -> Void) async {
        wake()  // whatever a previous run, or another instance, left
        await withGracefulShutdownHandler {
            await withTaskGroup(of: Void.self) { ticker in
                if let interval {
                    ticker.addTask { [self] in
                        while !isStopping {
                            try? await Task.sleep(for: interval)
                            wake()
                        }
                    }
                }
                // A wake-up buffered before shutdown began is not a turn.
                for await _ in wakeups where !isStopping { await turn() }
                ticker.cancelAll()
            }
        } onGracefulShutdown: { [self] in
            stopping.store(true, ordering: .relaxed)
            continuation.finish()
            onStop()
        }
    }
}
