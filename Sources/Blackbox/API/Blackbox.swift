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
    private static let current = Mutex<LoggingCore?>(nil)
    private static let bootstrapped = Atomic<Bool>(false)

    /// Starts logging: opens the journal in the configuration's directory, replays what a previous
    /// run left in it, starts the writer, and (once per process, as swift-log allows) bootstraps
    /// `LoggingSystem` with `BlackboxLogHandler`. Lines are drained at normal process exit.
    ///
    /// swift-log traps on a second bootstrap and cannot be asked whether it was bootstrapped: if the
    /// app bootstraps swift-log itself, pass `bootstrapLogging: false` and use
    /// `BlackboxLogHandler(label:core:)` in its own factory (e.g. inside a `MultiplexLogHandler`).
    @discardableResult
    public static func start(_ configuration: BlackboxConfiguration, bootstrapLogging: Bool = true)
        throws(BlackboxError) -> LoggingCore
    {
        let core: LoggingCore = try current.withLock { (current) throws(BlackboxError) -> LoggingCore in
            if current != nil { throw BlackboxError.alreadyStarted }
            let core = try LoggingCore(configuration: configuration)
            current = core
            return core
        }
        if bootstrapLogging, bootstrapped.compareExchange(expected: false, desired: true, ordering: .relaxed).exchanged
        {
            LoggingSystem.bootstrap { label in
                guard let core = Blackbox.core else { return StreamLogHandler.standardError(label: label) }
                return BlackboxLogHandler(label: label, core: core)
            }
            atexit { Blackbox.core?.shutdown(timeout: .seconds(2)) }
        }
        startCrashReporting(configuration, core: core)
        recordRun(configuration)
        startBackgroundWork(configuration, core: core)
        return core
    }

    /// Reports the earlier runs that died unseen, then records this one until its clean exit. Before
    /// delivery starts, so the reports go out with the first upload.
    private static func recordRun(_ configuration: BlackboxConfiguration) {
        let options = configuration.crashReporting
        guard options.enabled, options.reportUnseenDeaths else { return }
        let directory = DiagnosticsDirectory(configuration.directory)
        let logFile =
            configuration.sinks.contains(.file)
            ? "\(directory.logs)/\(LogFiles.activeFileName(baseName: configuration.baseFileName))" : nil
        _ = UnseenDeaths(directory: directory, logFile: logFile, logTailLines: options.logTailLines).reportAll()
        CurrentRun.begin(
            .current(
                appName: configuration.appName, appVersion: configuration.appVersion,
                appBuild: configuration.appBuild),
            in: directory)
    }

    /// Crash capture is part of start-up but never makes it fail: a problem is reported once on stderr.
    private static func startCrashReporting(_ configuration: BlackboxConfiguration, core: LoggingCore) {
        let options = configuration.crashReporting
        guard options.enabled else { return }
        do {
            try CrashCapture.install(
                directory: configuration.directory, appName: configuration.appName,
                appVersion: configuration.appVersion,
                appBuild: configuration.appBuild, options: options, journal: core.journal.file)
        } catch {
            InternalDiagnostics.report(error.description)
        }
    }

    /// Symbolication runs a helper process per image, and delivery may wait on the network: neither
    /// ever runs on the caller's start-up path. Delivery starts after processing, so the reports of
    /// the run that just crashed go out with the first upload.
    private static func startBackgroundWork(_ configuration: BlackboxConfiguration, core: LoggingCore) {
        let processPending = configuration.crashReporting.enabled && configuration.crashReporting.processPendingAtStart
        guard processPending || configuration.delivery != nil else { return }
        let processor = crashReportProcessor(configuration)
        startThread(name: "bbx-crash-proc") {
            if processPending { _ = processor.processPending() }
            // A shutdown while reports were being processed: delivery was stopped already.
            guard Blackbox.core === core else { return }
            configuration.delivery?.started(DeliveryContext(configuration: configuration, core: core))
        }
    }

    static func crashReportProcessor(_ configuration: BlackboxConfiguration) -> CrashReportProcessor {
        var processor = CrashReportProcessor(directory: configuration.directory)
        processor.symbolizerPath = configuration.crashReporting.symbolizerPath
        processor.debugFileDirectories = configuration.crashReporting.debugFileDirectories
        processor.logTailLines = configuration.crashReporting.logTailLines
        return processor
    }

    /// Turns the raw reports earlier runs left in `crashes/pending/` into outbox reports now, on the
    /// calling thread (`start` does the same in the background unless told not to).
    @discardableResult
    public static func processPendingCrashReports() -> CrashReportProcessor.Outcome {
        guard let core else { return CrashReportProcessor.Outcome() }
        return crashReportProcessor(core.configuration).processPending()
    }

    /// The running core, if `start` was called.
    public static var core: LoggingCore? { current.withLock { $0 } }

    public static func fastLogger(_ label: String) -> FastLogger? {
        core.map { FastLogger(label: label, core: $0) }
    }

    /// Blocks until everything logged so far is written, at most `timeout`.
    @discardableResult
    public static func flush(timeout: Duration = .seconds(5)) -> Bool { core?.flush(timeout: timeout) ?? true }

    public static func flush() async { await core?.flush() }

    /// Stops in order: delivery first (nothing reads the directory any more), then logging (drained
    /// to the file). Crash capture stays installed: a crash after shutdown is still recorded.
    /// `start` may be called again afterwards.
    public static func shutdown() {
        let core = current.withLock { current in
            defer { current = nil }
            return current
        }
        HangWatchdog.shared.stop()
        core?.configuration.delivery?.stop()
        core?.shutdown()
        CurrentRun.end()
    }

    /// Watches a dispatch queue (the main queue, a serial queue an event loop or a lock is served
    /// on): the watchdog sends it an empty block a few times per `deadline` and, when one waits
    /// longer than that, writes one `hang` report for the episode (every thread's stack, the last log
    /// lines) and logs a warning; when the queue runs again, it logs how long the hang lasted. Opt-in;
    /// nothing runs while no target is watched. See docs/crash-capture.md, "Hangs".
    public static func watchForHangs(queue: DispatchQueue, name: String, deadline: Duration = .seconds(2)) {
        HangWatchdog.shared.add(HangTarget(name: name, deadline: deadline, source: .queue(queue)))
    }

    /// A heartbeat for a loop that is not a dispatch queue (a run loop, an event loop, a worker): call
    /// `beat()` from it at least once per `deadline`; a longer silence is a hang, reported as for
    /// `watchForHangs(queue:)`.
    public static func hangHeartbeat(_ name: String, deadline: Duration = .seconds(2)) -> HangHeartbeat {
        let target = HangTarget(name: name, deadline: deadline, source: .heartbeat)
        target.showedLife()
        HangWatchdog.shared.add(target)
        return HangHeartbeat(target: target)
    }

    /// The last `count` lines logged (crash and non-fatal reports embed them).
    public static func recentLines(_ count: Int = 50) -> [String] { core?.recentLines(count) ?? [] }

    /// Changes levels at run time; existing loggers follow.
    public static func setLevels(_ levels: LevelSettings) { core?.levels = levels }
}
