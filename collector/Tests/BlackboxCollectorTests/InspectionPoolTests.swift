import Foundation
import Synchronization
import Testing

@testable import BlackboxCollector

/// Issue 47, items 2 and 4: one project's costliest uploads must not hold every inspection thread,
/// or another project's upload waits behind them (9.2 s instead of 2 s in the hostile process suite
/// while one project sent 1 MiB Sentry events of nested lists).
@Suite("Inspection pool")
struct InspectionPoolTests {
    typealias Share = FairShare<String>

    final class Counter: Sendable {
        private let value = Atomic<Int>(0)
        func add() { value.add(1, ordering: .relaxed) }
        var count: Int { value.load(ordering: .relaxed) }
    }

    @Test("a project takes at most its share of the threads; another project's inspection starts at once")
    func shareOfThreads() {
        var share = Share(threads: 3, perProject: 2)
        let a = (0..<4).map { _ in share.newTicket(project: 1) }
        #expect(share.arrive(a[0], "a0") == .start)
        #expect(share.arrive(a[1], "a1") == .start)
        #expect(share.arrive(a[2], "a2") == .wait, "a project's third inspection waits with a thread free")
        let b = share.newTicket(project: 2)
        #expect(share.arrive(b, "b") == .start, "the thread no project may fill is the other project's")
        #expect(share.arrive(a[3], "a3") == .wait)
        #expect(share.runningCount == 3)
        // A thread frees up: the waiting project's inspections go in their order.
        #expect(share.finish(a[0]) == "a2")
        #expect(share.finish(b) == nil, "project 1 has its share running: nothing else may start")
        #expect(share.finish(a[1]) == "a3")
        #expect(share.runningCount == 2)
    }

    @Test("when a thread frees up, the waiting project running the fewest goes first, whoever came first")
    func fewestRunningFirst() {
        var share = Share(threads: 2, perProject: 2)
        let a = (0..<4).map { _ in share.newTicket(project: 1) }
        let b = share.newTicket(project: 2)
        #expect(share.arrive(a[0], "a0") == .start)
        #expect(share.arrive(a[1], "a1") == .start)
        #expect(share.arrive(a[2], "a2") == .wait)
        #expect(share.arrive(a[3], "a3") == .wait)
        #expect(share.arrive(b, "b") == .wait, "both threads are busy")
        #expect(share.finish(a[0]) == "b", "project 2 runs none, project 1 one: project 2's goes first")
        #expect(share.finish(a[1]) == "a2")
        #expect(share.waitingProjects == [1])
    }

    @Test("a cancelled inspection leaves the queue, whether it waited or had not arrived yet")
    func cancellation() {
        var share = Share(threads: 1, perProject: 1)
        let first = share.newTicket(project: 1)
        let waiting = share.newTicket(project: 2)
        let early = share.newTicket(project: 3)
        #expect(share.arrive(first, "first") == .start)
        #expect(share.arrive(waiting, "waiting") == .wait)
        #expect(share.cancel(waiting) == "waiting")
        #expect(share.cancel(early) == nil)
        #expect(share.arrive(early, "early") == .cancelled)
        #expect(share.cancel(first) == nil, "a running inspection ends on its own")
        #expect(share.finish(first) == nil)
        #expect(share.runningCount == 0 && share.waitingProjects.isEmpty)
        let later = share.newTicket(project: 1)
        #expect(share.arrive(later, "later") == .start, "nothing cancelled stays behind")
    }

    @Test("on real threads: with one project's inspections blocked on every thread it may have, another's runs")
    func realThreads() async throws {
        let pool = InspectionPool(perProject: 1)
        let gate = DispatchSemaphore(value: 0)
        let started = Counter()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<3 {
                group.addTask {
                    try await pool.run(project: 1) {
                        started.add()
                        gate.wait()
                    }
                }
            }
            let deadline = ContinuousClock.now + .seconds(30)
            while started.count < 1, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(5))
            }
            let other = try await pool.run(project: 2) { "project 2 ran" }
            #expect(other == "project 2 ran")
            #expect(started.count == 1, "project 1 holds one thread, its others wait")
            for _ in 0..<3 { gate.signal() }
            try await group.waitForAll()
        }
        #expect(started.count == 3)
        #expect(pool.completedJobs == 4)
    }

    @Test("a request cancelled while its inspection waits is answered at once and its work never runs")
    func cancelledWhileWaiting() async throws {
        let pool = InspectionPool(perProject: 1)
        let gate = DispatchSemaphore(value: 0)
        let blocking = Counter()
        let ran = Counter()
        let blocker = Task {
            try await pool.run(project: 1) {
                blocking.add()
                gate.wait()
            }
        }
        let deadline = ContinuousClock.now + .seconds(30)
        while blocking.count == 0, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(5))
        }
        let waiter = Task { try await pool.run(project: 1) { ran.add() } }
        try await Task.sleep(for: .milliseconds(50))
        waiter.cancel()
        let outcome = await waiter.result
        #expect(throws: CancellationError.self) { try outcome.get() }
        gate.signal()
        try await blocker.value
        #expect(ran.count == 0)
        #expect(pool.completedJobs == 1)
    }
}
