import BlackboxFormat
import Synchronization

/// Everything `Blackbox.start` set running, owned in one place: the logging core, crash capture and
/// the run record, non-fatal assertion reports, the processing of earlier runs' crash reports, and
/// delivery. `shutdown()` stops them in order (docs/concurrency.md lists every thread and who stops it).
///
/// `Blackbox.current` is the one process-wide reference (as swift-log's `LoggingSystem` is); the rest
/// of the library reaches the running runtime through it.
public final class BlackboxRuntime: Sendable {
    /// The logging core: build loggers on it when the app bootstraps swift-log itself.
    public let core: LoggingCore
    public var configuration: BlackboxConfiguration { core.configuration }
    let assertions: AssertionReporter

    private enum Phase {
        case running
        /// Set under the lock before delivery is told to stop, so the start-up thread cannot start
        /// delivery after `shutdown` stopped it.
        case stopped
    }
    private let phase = Mutex(Phase.running)

    init(core: LoggingCore) {
        self.core = core
        self.assertions = AssertionReporter(core: core)
    }

    public var isRunning: Bool { phase.withLock { $0 == .running } }

    /// Crash capture, the run record and the background start-up work, after the core is running.
    func startServices() {
        startCrashCapture()
        recordRun()
        startBackgroundWork()
    }

    /// Stops in order: hang watching, then delivery (nothing reads the directory any more), then
    /// logging (drained to the file, at most `timeout`), then the run record (a clean end). Crash
    /// capture stays installed: a crash after shutdown is still recorded. Idempotent.
    public func shutdown(timeout: Duration = .seconds(5)) {
        let wasRunning = phase.withLock { phase in
            defer { phase = .stopped }
            return phase == .running
        }
        guard wasRunning else { return }
        Blackbox.forget(self)
        HangWatchdog.shared.stop()
        configuration.delivery?.stop()
        core.shutdown(timeout: timeout)
        CurrentRun.end()
    }

    /// Turns the raw reports earlier runs left in `crashes/pending/` into outbox reports, on the
    /// calling thread.
    func processPendingCrashReports(while shouldContinue: @Sendable () -> Bool = { true })
        -> CrashReportProcessor.Outcome
    {
        Self.crashReportProcessor(configuration).processPending(while: shouldContinue)
    }

    static func crashReportProcessor(_ configuration: BlackboxConfiguration) -> CrashReportProcessor {
        var processor = CrashReportProcessor(directory: configuration.directory)
        processor.symbolizerPath = configuration.crashReporting.symbolizerPath
        processor.debugFileDirectories = configuration.crashReporting.debugFileDirectories
        processor.logTailLines = configuration.crashReporting.logTailLines
        return processor
    }

    // MARK: start-up steps

    /// Crash capture is part of start-up but never makes it fail: a problem is reported once on stderr.
    private func startCrashCapture() {
        let options = configuration.crashReporting
        guard options.enabled else { return }
        do {
            try CrashCapture.install(
                directory: configuration.directory, appName: configuration.appName,
                appVersion: configuration.appVersion, appBuild: configuration.appBuild, options: options,
                journal: core.journal.file)
        } catch {
            InternalDiagnostics.report(error.description)
        }
    }

    /// Reports the earlier runs that died unseen, then records this one until its clean exit. Before
    /// delivery starts, so the reports go out with the first upload.
    private func recordRun() {
        let options = configuration.crashReporting
        guard options.enabled, options.reportUnseenDeaths else { return }
        let directory = DiagnosticsDirectory(configuration.directory)
        let logFile =
            configuration.sinks.contains(.file)
            ? "\(directory.logs)/\(LogFiles.activeFileName(baseName: core.logBaseName))" : nil
        _ = UnseenDeaths(directory: directory, logFile: logFile, logTailLines: options.logTailLines).reportAll()
        CurrentRun.begin(
            .current(
                appName: configuration.appName, appVersion: configuration.appVersion,
                appBuild: configuration.appBuild, outputs: configuration.sinks.names),
            in: directory)
    }

    /// Symbolication runs a helper process per image, and delivery may wait on the network: neither
    /// ever runs on the caller's start-up path. Delivery starts after processing, so the reports of
    /// the run that just crashed go out with the first upload; a shutdown meanwhile ends processing
    /// after the report at hand and keeps delivery from starting.
    private func startBackgroundWork() {
        let configuration = self.configuration
        let processPending = configuration.crashReporting.enabled && configuration.crashReporting.processPendingAtStart
        guard processPending || configuration.delivery != nil else { return }
        startThread(name: CrashReportProcessor.processingThreadName) { [self] in
            if processPending { _ = processPendingCrashReports(while: { self.isRunning }) }
            guard let delivery = configuration.delivery else { return }
            // Under the lock: `shutdown` either sees delivery started (and stops it) or keeps it from starting.
            phase.withLock { phase in
                guard phase == .running else { return }
                delivery.started(DeliveryContext(configuration: configuration, core: core))
            }
        }
    }
}
