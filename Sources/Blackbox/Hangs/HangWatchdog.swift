import BlackboxFormat
import Logging
import Synchronization

/// The opt-in hang detector (`Blackbox.watchForHangs`, `Blackbox.hangHeartbeat`) of one runtime:
/// one thread, `bbx-hang-watch`, started with the first target, that checks each target a few times
/// per deadline. A missed deadline starts an episode: one `hang` report with every thread's stack and
/// the last log lines, and a warning in the log; when the target shows life again, an info line says
/// how long it lasted. Nothing runs on the app's threads but a queue target's ping block.
final class HangWatchdog: Sendable {
    /// Whose directory and log the reports go to.
    private let core: LoggingCore

    private struct State {
        var targets: [HangTarget] = []
        var running = false
        var stopping = false
    }
    private let state = Mutex(State())
    private let wake = ConditionLock()
    /// Straight into the runtime's core, whoever bootstrapped swift-log (the runtime is made before
    /// `LoggingSystem.bootstrap`, and an app may bootstrap it elsewhere).
    private let logger: Logger

    init(core: LoggingCore) {
        self.core = core
        self.logger = Logger(label: "blackbox.hangs") { BlackboxLogHandler(label: $0, core: core) }
    }

    func add(_ target: HangTarget) {
        let start = state.withLock { state in
            state.targets.append(target)
            state.stopping = false
            defer { state.running = true }
            return !state.running
        }
        if start { startThread(name: "bbx-hang-watch") { self.run() } }
        wake.withLock { wake.broadcast() }
    }

    func remove(_ target: HangTarget) {
        state.withLock { $0.targets.removeAll { $0 === target } }
    }

    /// Ends the thread (the runtime's shutdown); targets are dropped.
    func stop() {
        state.withLock { state in
            state.targets = []
            state.stopping = true
        }
        wake.withLock { wake.broadcast() }
    }

    private func run() {
        while true {
            let targets: [HangTarget]? = state.withLock { state in
                if state.stopping || state.targets.isEmpty {
                    state.running = false
                    return nil
                }
                return state.targets
            }
            guard let targets else { return }
            let now = monotonicNanoseconds()
            for target in targets { check(target, now: now) }
            // A quarter of the shortest deadline, at least 20 ms: an episode is seen at most 25 % late.
            let period = max(20_000_000, (targets.map(\.deadline.nanoseconds).min() ?? 2_000_000_000) / 4)
            wake.withLock { _ = wake.wait(untilMonotonic: monotonicNanoseconds() + period) }
        }
    }

    private func check(_ target: HangTarget, now: UInt64) {
        target.ping(now: now)
        let silent = target.unresponsive(now: now)
        let since = target.hungSince.load(ordering: .relaxed)
        if since == 0, silent > target.deadline.nanoseconds {
            target.hungSince.store(now - silent, ordering: .relaxed)
            let path = HangReporter.write(target, unresponsiveFor: silent, core: core)
            logger.warning(
                "hang: \(target.name) has not responded for \(Self.seconds(silent)) s (deadline \(Self.seconds(target.deadline.nanoseconds)) s)\(path.map { "; report \($0)" } ?? "")"
            )
        } else if since != 0, silent == 0 || silent < now - since {
            // It showed life after the episode began.
            target.hungSince.store(0, ordering: .relaxed)
            let lasted = target.lastAlive.load(ordering: .acquiring) &- since
            logger.info("hang over: \(target.name) was unresponsive for \(Self.seconds(lasted)) s")
        }
    }

    static func seconds(_ nanoseconds: UInt64) -> String {
        let tenths = (nanoseconds + 50_000_000) / 100_000_000
        return "\(tenths / 10).\(tenths % 10)"
    }
}
