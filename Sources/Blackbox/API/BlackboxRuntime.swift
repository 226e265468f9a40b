import BlackboxFormat
import Synchronization

/// Everything `Blackbox.start` set running, owned in one place: the logging core, crash capture and
/// the run record, non-fatal assertion reports, the processing of earlier runs' crash reports, and
/// delivery. `shutdown()` stops them in order (docs/concurrency.md lists every thread and who stops it).
///
/// `Blackbox.current` is the one process-wide reference (as swift-log's `LoggingSystem` is); the rest
/// of the library reaches the running runtime through it. What stays process-wide outside it, and
/// why, is listed in docs/concurrency.md ("Process-wide state").
public final class BlackboxRuntime: Sendable {
    /// The logging core: build loggers on it when the app bootstraps swift-log itself.
    public let core: LoggingCore
    public var configuration: BlackboxConfiguration { core.configuration }
    let assertions: AssertionReporter
    /// The hang targets the app asked to watch (`Blackbox.watchForHangs`, `hangHeartbeat`).
    let hangs: HangWatchdog
    /// This process's run record, for unseen-death detection and release health.
    let run = CurrentRun()

    private enum Phase {
        /// With the delivery's task once the start-up thread began it.
        case running(delivery: Task<Void, Never>?)
        /// Set under the lock before the delivery's task is cancelled, so the start-up thread cannot
        /// begin delivery after `shutdown` ended it.
        case stopped
    }
    private let phase = Mutex(Phase.running(delivery: nil))

    init(core: LoggingCore) {
        self.core = core
        self.assertions = AssertionReporter(core: core)
        self.hangs = HangWatchdog(core: core)
    }

    public var isRunning: Bool {
        phase.withLock { if case .running = $0 { true } else { false } }
    }

    /// Crash capture, the run record and the background start-up work, after the core is running.
    func startServices() {
        startCrashCapture()
        recordRun()
        startBackgroundWork()
    }

    /// Stops in order: hang watching, then delivery (its task is cancelled; it stops reading the
    /// directory and keeps what it did not send), then logging (drained to the file, at most
    /// `timeout`), then the run record (a clean end). Crash capture stays installed: a crash after
    /// shutdown is still recorded. Idempotent. Returns at once; `shutdownAndWait` also waits for
    /// delivery to have ended before logging stops.
    public func shutdown(timeout: Duration = .seconds(5)) {
        guard let delivery = stopPhase() else { return }
        delivery?.cancel()
        finishShutdown(timeout: timeout)
    }

    /// `shutdown`, waiting for the delivery's task to end (at most `timeout`) before logging stops:
    /// what delivery logs on its way out is in the log. For async code (a server's shutdown).
    public func shutdownAndWait(timeout: Duration = .seconds(5)) async {
        guard let delivery = stopPhase() else { return }
        if let delivery {
            delivery.cancel()
            await withTaskGroup(of: Void.self) { group in
                group.addTask { await delivery.value }
                group.addTask { try? await Task.sleep(for: timeout) }
                await group.next()
                group.cancelAll()
            }
        }
        finishShutdown(timeout: timeout)
    }

    /// Marks the runtime stopped; nil when it was already, else the delivery task to end (if any).
    private func stopPhase() -> Task<Void, Never>?? {
        phase.withLock { phase -> Task<Void, Never>?? in
            defer { phase = .stopped }
            guard case .running(let delivery) = phase else { return nil }
            return .some(delivery)
        }
    }

    private func finishShutdown(timeout: Duration) {
        Blackbox.forget(self)
        hangs.stop()
        core.announcements.finish()
        core.shutdown(timeout: timeout)
        run.end()
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
        run.begin(
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
            if processPending {
                _ = processPendingCrashReports(while: { self.isRunning })
                ReportNaming.publishLeftovers(
                    in: DiagnosticsDirectory(configuration.directory),
                    builder: Self.crashReportProcessor(configuration).builder)
            }
            guard let delivery = configuration.delivery else { return }
            // Under the lock: `shutdown` either sees delivery started (and cancels it) or keeps it from
            // starting. The one task the runtime starts, and owns: its `run` is structured within.
            phase.withLock { phase in
                guard case .running = phase else { return }
                let (context, events) = (
                    DeliveryContext(configuration: configuration, core: core), core.announcements.events
                )
                phase = .running(
                    delivery: Task.detached(priority: .background) { await delivery.run(context, events: events) })
            }
        }
    }
}
