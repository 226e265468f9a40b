import Foundation
import Synchronization
import Testing

@testable import BlackboxCollector

@Suite("Closing a store waits for the operations in flight")
struct OperationsInFlightTests {
    /// An operation that runs until `release` is called.
    final class HeldOperation: Sendable {
        private let released = Mutex<CheckedContinuation<Void, Never>?>(nil)
        private let started = Atomic<Bool>(false)
        var hasStarted: Bool { started.load(ordering: .acquiring) }

        func run() async {
            await withCheckedContinuation { continuation in
                released.withLock { $0 = continuation }
                started.store(true, ordering: .releasing)
            }
        }

        func release() { released.withLock { $0.take() }?.resume() }
    }

    static func waitUntil(_ condition: () -> Bool) async throws {
        for _ in 0..<2_000 where !condition() { try await Task.sleep(for: .milliseconds(5)) }
        try #require(condition())
    }

    /// A store's operations with one running until `held.release()`.
    static func holdingAnOperation() async throws -> (OperationsInFlight, HeldOperation, Task<Void, any Error>) {
        let operations = OperationsInFlight(store: "the test store")
        let held = HeldOperation()
        let running = Task { try await operations.run { await held.run() } }
        try await waitUntil { held.hasStarted }
        return (operations, held, running)
    }

    /// Closes `operations` in a task of its own; the flag is set once close has returned.
    static func closing(_ operations: OperationsInFlight) -> (Task<Void, Never>, Flag) {
        let closed = Flag()
        let closing = Task {
            await operations.close(waitingAtMost: .seconds(600))
            closed.set()
        }
        return (closing, closed)
    }

    @Test("close returns only after the running operation ends, and refuses new ones meanwhile")
    func closeWaits() async throws {
        let (operations, held, running) = try await Self.holdingAnOperation()

        let (closing, closed) = Self.closing(operations)
        try await Self.waitUntil { operations.isClosing }
        await #expect(throws: StorageError.self) { try await operations.run { 1 } }
        // Still waiting for the held operation (it could not have ended: nothing released it).
        try await Task.sleep(for: .milliseconds(50))
        #expect(!closed.isSet)

        held.release()
        try await running.value
        await closing.value
        #expect(closed.isSet)
    }

    @Test("with nothing running, close returns at once; an operation that never ends holds it only until the timeout")
    func closeIsBounded() async throws {
        let idle = OperationsInFlight(store: "the test store")
        await idle.close(waitingAtMost: .seconds(600))
        #expect(idle.isClosing)

        let (operations, held, running) = try await Self.holdingAnOperation()
        let started = ContinuousClock.now
        await operations.close(waitingAtMost: .milliseconds(100))
        #expect(ContinuousClock.now - started >= .milliseconds(100))
        held.release()
        try await running.value
    }

    @Test("a shutdown by cancellation still waits for the running operation")
    func cancelledCloseWaits() async throws {
        let (operations, held, running) = try await Self.holdingAnOperation()
        let (closing, closed) = Self.closing(operations)
        closing.cancel()
        try await Self.waitUntil { operations.isClosing }
        try await Task.sleep(for: .milliseconds(50))
        #expect(!closed.isSet)
        held.release()
        try await running.value
        await closing.value
        #expect(closed.isSet)
    }
}
