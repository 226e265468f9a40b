import ServiceLifecycle
import ServiceLifecycleTestKit
import Synchronization
import Testing

@testable import BlackboxCollector

@Suite("The background services' loop: turns at start, on wake-ups and ticks; a clean stop")
struct WorkerLoopTests {
    final class Turns: Sendable {
        let count = Atomic<Int>(0)
        let sawStopping = Atomic<Bool>(false)
        let stopped = Atomic<Bool>(false)
        let release = Atomic<Bool>(false)
    }

    @Test("a turn at start and one per wake-up (wake-ups during a turn fold into one more)")
    func wakeUps() async throws {
        let loop = WorkerLoop(interval: nil)
        let turns = Turns()
        try await testGracefulShutdown { shutdown in
            async let running: Void = loop.run {
                guard turns.count.add(1, ordering: .relaxed).newValue == 1 else { return }
                while !turns.release.load(ordering: .relaxed) { try? await Task.sleep(for: .milliseconds(5)) }
            }
            try await waitUntil { turns.count.load(ordering: .relaxed) == 1 }
            for _ in 0..<5 { loop.wake() }  // during the first turn: one more turn
            turns.release.store(true, ordering: .relaxed)
            try await waitUntil { turns.count.load(ordering: .relaxed) == 2 }
            try await Task.sleep(for: .milliseconds(300))
            let afterWakeUps = turns.count.load(ordering: .relaxed)
            #expect(afterWakeUps == 2, "five wake-ups during a turn are one more turn")
            shutdown.triggerGracefulShutdown()
            await running
        }
        loop.wake()
        try await Task.sleep(for: .milliseconds(100))
        let afterStop = turns.count.load(ordering: .relaxed)
        #expect(afterStop == 2, "no turn after the loop stopped")
    }

    @Test("ticks every interval; shutdown lets the turn in progress see it, and ends the loop")
    func ticksAndShutdown() async throws {
        let loop = WorkerLoop(interval: .milliseconds(20))
        let turns = Turns()
        try await testGracefulShutdown { shutdown in
            async let running: Void = loop.run(onStop: { turns.stopped.store(true, ordering: .relaxed) }) {
                let turn = turns.count.add(1, ordering: .relaxed).newValue
                guard turn == 5 else { return }
                // The fifth turn is in progress when shutdown begins: it sees it and stops early.
                while !loop.isStopping { try? await Task.sleep(for: .milliseconds(5)) }
                turns.sawStopping.store(true, ordering: .relaxed)
            }
            try await waitUntil { turns.count.load(ordering: .relaxed) >= 5 }
            shutdown.triggerGracefulShutdown()
            await running
        }
        let total = turns.count.load(ordering: .relaxed)
        #expect(total == 5, "no turn after shutdown began")
        let (sawStopping, stopped) = (
            turns.sawStopping.load(ordering: .relaxed), turns.stopped.load(ordering: .relaxed)
        )
        #expect(sawStopping, "the turn in progress saw the shutdown")
        #expect(stopped, "onStop ran")
    }

    private func waitUntil(_ condition: () -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(30)
        while !condition() {
            guard ContinuousClock.now < deadline else {
                Issue.record("timed out")
                return
            }
            try await Task.sleep(for: .milliseconds(10))
        }
    }
}
