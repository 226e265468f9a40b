import Synchronization

/// The store's database operations in flight, so that closing the client waits for them to end.
///
/// Why: postgres-nio (1.33.2) never completes a query written to a connection it has already closed
/// (`PostgresConnection.query` writes its task with a nil promise, and a closed channel drops it).
/// Closing the client while a transaction's body ran left that transaction's `COMMIT` waiting forever,
/// and the collector's stop with it (one stop in 20-100 under load). Closing refuses new operations,
/// waits for the running ones, then closes.
final class OperationsInFlight: Sendable {
    private enum State {
        case open(running: Int)
        case closing(running: Int, waiters: [CheckedContinuation<Void, Never>])
    }

    private let state = Mutex(State.open(running: 0))
    /// Names the store in the error an operation gets once closing has begun.
    private let store: String

    init(store: String) { self.store = store }

    /// Runs `operation` unless closing has begun.
    @discardableResult
    func run<T>(_ operation: () async throws -> T) async throws -> T {
        try enter()
        defer { leave() }
        return try await operation()
    }

    var isClosing: Bool {
        state.withLock { if case .closing = $0 { true } else { false } }
    }

    /// Refuses new operations and returns once the running ones have ended, or after `timeout` (an
    /// operation waiting for a server that never answers must not hold the shutdown for good).
    func close(waitingAtMost timeout: Duration) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let drained = state.withLock { state -> Bool in
                let (running, waiters) =
                    switch state {
                    case .open(let running): (running, [CheckedContinuation<Void, Never>]())
                    case .closing(let running, let waiters): (running, waiters)
                    }
                state = .closing(running: running, waiters: running == 0 ? waiters : waiters + [continuation])
                return running == 0
            }
            if drained {
                continuation.resume()
                return
            }
            // Unstructured: a shutdown by cancellation must still wait, and a cancelled task's sleep
            // would end at once.
            Task { [weak self] in
                try? await Task.sleep(for: timeout)
                self?.resumeWaiters()
            }
        }
    }

    private func enter() throws {
        try state.withLock { state in
            switch state {
            case .open(let running): state = .open(running: running + 1)
            case .closing: throw StorageError.closed(store)
            }
        }
    }

    private func leave() {
        let drained = state.withLock { state -> Bool in
            switch state {
            case .open(let running):
                state = .open(running: running - 1)
                return false
            case .closing(let running, let waiters):
                state = .closing(running: running - 1, waiters: waiters)
                return running == 1
            }
        }
        if drained { resumeWaiters() }
    }

    private func resumeWaiters() {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            guard case .closing(let running, let waiters) = state else { return [] }
            state = .closing(running: running, waiters: [])
            return waiters
        }
        for waiter in waiters { waiter.resume() }
    }
}
