import Blackbox
import Dispatch
import Foundation

// Threads started after `Blackbox.start`: whether each has its alternate signal stack from its first
// instruction, and what that costs a thread's start (the crash benchmark's row).

private func hasAlternateStack() -> Bool {
    var current = stack_t()
    return sigaltstack(nil, &current) == 0 && current.ss_flags & Int32(SS_DISABLE) == 0
}

/// Counts the threads (of each kind) that had no alternate stack when their code began.
private final class Tally: @unchecked Sendable {
    private let lock = NSLock()
    private var without: [String: Int] = [:]
    private let done = DispatchGroup()

    func start() { done.enter() }
    func record(_ kind: String, hasStack: Bool) {
        lock.withLock { without[kind, default: 0] += hasStack ? 0 : 1 }
        done.leave()
    }
    func wait() -> [String: Int] {
        done.wait()
        return lock.withLock { without }
    }
}

/// `count` threads, Dispatch blocks and Tasks, each checking its stack at once; then, after a sweep
/// had time to run, what CrashCapture says about coverage. One JSON line.
func newThreadCoverage(_ count: Int) -> String {
    let tally = Tally()
    for index in 0..<count {
        tally.start()
        let thread = Thread { tally.record("thread", hasStack: hasAlternateStack()) }
        thread.start()
        tally.start()
        DispatchQueue(label: "coverage-\(index)", attributes: .concurrent).async {
            tally.record("dispatch", hasStack: hasAlternateStack())
        }
        tally.start()
        Task.detached { tally.record("task", hasStack: hasAlternateStack()) }
    }
    let without = tally.wait()
    // The sweep (every second by default) has run since: it must have signalled none of them.
    usleep(1_500_000)
    let coverage = CrashCapture.alternateStackCoverage
    let withoutFields = ["thread", "dispatch", "task"].map { "\"\($0)\": \(without[$0] ?? 0)" }
    return """
        {"without": {\(withoutFields.joined(separator: ", "))}, "coveredAtStart": \(coverage.coveredAtStart), \
        "givenBySweep": \(coverage.givenBySweep), "withTheirOwn": \(coverage.withTheirOwn)}
        """
}

/// Starts and joins `count` threads one after another; one JSON line of each one's nanoseconds.
func threadStartCost(_ count: Int) -> String {
    var nanoseconds: [UInt64] = []
    nanoseconds.reserveCapacity(count)
    for _ in 0..<count {
        let started = DispatchTime.now().uptimeNanoseconds
        var thread = pthread_t()
        guard pthread_create(&thread, nil, { _ in nil }, nil) == 0 else { return "{\"error\": \"pthread_create\"}" }
        pthread_join(thread, nil)
        nanoseconds.append(DispatchTime.now().uptimeNanoseconds - started)
    }
    let covered = CrashCapture.alternateStackCoverage.coveredAtStart
    return "{\"covered\": \(covered), \"nanoseconds\": [\(nanoseconds.map(String.init).joined(separator: ","))]}"
}
