import BlackboxFormat
import Dispatch
import Logging
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// The process-wide entry point.
///
/// ```swift
/// try Blackbox.start(BlackboxConfiguration(appName: "shop"))
/// let logger = Logger(label: "checkout")      // swift-log, now backed by Blackbox
/// let fast = Blackbox.fastLogger("hot-path")  // the native API
/// ```
public enum Blackbox {
    private static let running = Mutex<BlackboxRuntime?>(nil)
    private static let bootstrapped = Atomic<Bool>(false)

    /// Starts logging: opens the journal in the configuration's directory, replays what a previous
    /// run left in it, starts the writer, and (once per process, as swift-log allows) bootstraps
    /// `LoggingSystem` with `BlackboxLogHandler`; then crash capture, the processing of earlier
    /// runs' crash reports and delivery. Lines are drained at normal process exit.
    ///
    /// swift-log traps on a second bootstrap and cannot be asked whether it was bootstrapped: if the
    /// app bootstraps swift-log itself, pass `bootstrapLogging: false` and use
    /// `BlackboxLogHandler(label:core:)` with the returned runtime's `core` in its own factory (e.g.
    /// inside a `MultiplexLogHandler`).
    @discardableResult
    public static func start(_ configuration: BlackboxConfiguration, bootstrapLogging: Bool = true)
        throws(BlackboxError) -> BlackboxRuntime
    {
        let runtime = try running.withLock { (running) throws(BlackboxError) -> BlackboxRuntime in
            if running != nil { throw BlackboxError.alreadyStarted }
            let runtime = BlackboxRuntime(core: try LoggingCore(configuration: configuration))
            running = runtime
            return runtime
        }
        if bootstrapLogging, bootstrapped.compareExchange(expected: false, desired: true, ordering: .relaxed).exchanged
        {
            LoggingSystem.bootstrap { label in
                guard let core = Blackbox.core else { return StreamLogHandler.standardError(label: label) }
                return BlackboxLogHandler(label: label, core: core)
            }
            atexit { Blackbox.core?.shutdown(timeout: .seconds(2)) }
        }
        runtime.startServices()
        return runtime
    }

    /// The running runtime, if `start` was called (and `shutdown` not yet).
    public static var current: BlackboxRuntime? { running.withLock { $0 } }

    /// `runtime` stopped: it is no longer the current one (a later `start` may make another).
    static func forget(_ runtime: BlackboxRuntime) {
        running.withLock { running in
            if running === runtime { running = nil }
        }
    }

    /// Turns the raw reports earlier runs left in `crashes/pending/` into outbox reports now, on the
    /// calling thread (`start` does the same in the background unless told not to).
    @discardableResult
    public static func processPendingCrashReports() -> CrashReportProcessor.Outcome {
        current?.processPendingCrashReports() ?? CrashReportProcessor.Outcome()
    }

    /// The running core, if `start` was called.
    public static var core: LoggingCore? { current?.core }

    public static func fastLogger(_ label: String) -> FastLogger? {
        core.map { FastLogger(label: label, core: $0) }
    }

    /// Blocks until everything logged so far is written, at most `timeout`.
    @discardableResult
    public static func flush(timeout: Duration = .seconds(5)) -> Bool { core?.flush(timeout: timeout) ?? true }

    public static func flush() async { await core?.flush() }

    /// Stops the running runtime in order (see `BlackboxRuntime.shutdown`). `start` may be called
    /// again afterwards.
    public static func shutdown() { current?.shutdown() }

    /// Watches a dispatch queue (the main queue, a serial queue an event loop or a lock is served
    /// on): the watchdog sends it an empty block a few times per `deadline` and, when one waits
    /// longer than that, writes one `hang` report for the episode (every thread's stack, the last log
    /// lines) and logs a warning; when the queue runs again, it logs how long the hang lasted. Opt-in;
    /// nothing runs while no target is watched. The running runtime watches it until its shutdown;
    /// without one (before `start`), nothing does. See docs/crash-capture.md, "Hangs".
    public static func watchForHangs(queue: DispatchQueue, name: String, deadline: Duration = .seconds(2)) {
        current?.hangs.add(HangTarget(name: name, deadline: deadline, source: .queue(queue)))
    }

    /// A heartbeat for a loop that is not a dispatch queue (a run loop, an event loop, a worker): call
    /// `beat()` from it at least once per `deadline`; a longer silence is a hang, reported as for
    /// `watchForHangs(queue:)`.
    public static func hangHeartbeat(_ name: String, deadline: Duration = .seconds(2)) -> HangHeartbeat {
        let target = HangTarget(name: name, deadline: deadline, source: .heartbeat)
        target.showedLife()
        let watchdog = current?.hangs
        watchdog?.add(target)
        return HangHeartbeat(target: target, watchdog: watchdog)
    }

    /// The last `count` lines logged (crash and non-fatal reports embed them).
    public static func recentLines(_ count: Int = 50) -> [String] { core?.recentLines(count) ?? [] }

    /// Changes levels at run time; existing loggers follow.
    public static func setLevels(_ levels: LevelSettings) { core?.levels = levels }
}
