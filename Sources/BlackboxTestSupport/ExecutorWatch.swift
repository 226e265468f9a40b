import Foundation
import Synchronization

/// Watches the test process's global concurrent executor from a thread of its own: once a second it
/// enqueues an empty task and waits for it to run. A task that has not run after `stallBound` is
/// a stall, and the watch says so on stderr (with what every thread of the process is doing, from
/// `/proc`), once per stall, then again when the executor runs work again.
///
/// Why: the global executor has one thread per core (two here) and runs jobs first in, first out.
/// With every test of a process started at once, a job waited behind the others' for 20-26 s
/// (this watch's first reports; `make test` now caps how many tests run at once), and tests that
/// gave a ticker, a connection or a client 10-30 s failed. Twice a run even stopped with ~30 tests
/// started and none running, every thread idle (gdb: NIO threads waiting for work, no `swift_task`
/// frame, no child), the stage watchdog's timeout the only end. This names either in the log, with
/// its start and every thread's state, instead of a failed timing or a silent stage timeout. The
/// empty tasks it enqueues each second are also new wake-up requests to the pool: if a lost wake-up
/// is the cause of a stop, they end it, and the log says after how long.
public enum ExecutorWatch {
    /// Far above how long a runnable task waits on a loaded 2-core machine (under a second), far
    /// below the stage watchdog.
    public static let stallBound: Duration = .seconds(20)

    private static let started = Atomic<Bool>(false)

    /// Starts the watch once per process; later calls return at once.
    public static func start() {
        guard !started.exchange(true, ordering: .relaxed) else { return }
        let thread = Thread { watch() }
        thread.name = "executor-watch"
        thread.start()
    }

    private static func watch() {
        var stalledSince: ContinuousClock.Instant?
        while true {
            // One task per priority the tests run at: the runtime keeps a queue per priority.
            let priorities: [TaskPriority?] = [nil, .high, .medium, .low]
            let ran = Counter()
            let enqueued = ContinuousClock.now
            for priority in priorities {
                Task.detached(priority: priority) { ran.value.add(1, ordering: .relaxed) }
            }
            while ran.value.load(ordering: .relaxed) < priorities.count {
                usleep(50_000)
                let waited = ContinuousClock.now - enqueued
                if stalledSince == nil && waited > stallBound {
                    stalledSince = enqueued
                    report("no task has run for \(waited): the global executor is stalled\n\(threads())")
                }
            }
            if let since = stalledSince {
                report("the global executor runs tasks again, \(ContinuousClock.now - since) after the stall began")
                stalledSince = nil
            }
            sleep(1)
        }
    }

    private final class Counter: Sendable {
        let value = Atomic<Int>(0)
    }

    private static func report(_ text: String) {
        FileHandle.standardError.write(Data("executor watch (pid \(getpid())): \(text)\n".utf8))
    }

    /// Each thread's name, state and kernel wait channel.
    private static func threads() -> String {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        return tasks.sorted().map { task in
            let directory = "/proc/self/task/\(task)"
            let name = (try? String(contentsOfFile: "\(directory)/comm", encoding: .utf8)) ?? "?"
            let state =
                ((try? String(contentsOfFile: "\(directory)/stat", encoding: .utf8)) ?? "")
                .split(separator: ")").last?.split(separator: " ").first.map(String.init) ?? "?"
            let channel = (try? String(contentsOfFile: "\(directory)/wchan", encoding: .utf8)) ?? "?"
            return "  \(task) \(name.trimmingCharacters(in: .whitespacesAndNewlines)) \(state) \(channel)"
        }.joined(separator: "\n")
    }
}
