/// Crash capture settings (see docs/crash-capture.md).
public struct CrashReportingOptions: Sendable {
    /// Install the signal handlers at `Blackbox.start`. Default true.
    public var enabled = true
    /// Turn pending raw reports into outbox reports on a background thread at start. Default true.
    public var processPendingAtStart = true
    /// How much of the journal's tail a crash report copies (the last log lines). Default 64 KiB.
    public var journalTailBytes = 64 << 10
    /// How many log lines a processed report keeps. Default 50.
    public var logTailLines = 50
    /// llvm-symbolizer to use; default: `$BLACKBOX_SYMBOLIZER`, then `$PATH` and the toolchain.
    public var symbolizerPath: String?
    /// Where separated debug info lives (`--debug-file-directory`), e.g. `/usr/lib/debug`.
    public var debugFileDirectories: [String] = []
    /// At start, write a `termination` report for each earlier run of this directory that neither
    /// exited cleanly nor crashed with a report (SIGKILL, the OOM killer, a power loss), with its last
    /// log lines and the cause where Linux says it. Default true. See docs/crash-capture.md.
    public var reportUnseenDeaths = true
    /// Send each crash report to the collector while the crashing process waits, for processes whose
    /// diagnostics directory is gone by the next launch (ephemeral containers). Default nil: reports
    /// go out from the next launch. See docs/crash-capture.md, "Delivery at crash time".
    public var deliveryAtCrash: CrashTimeDelivery?
    /// Whether the Swift runtime's own backtracer still runs after Blackbox wrote its report. It
    /// symbolicates inside the dying process: a crashed server then takes seconds (5 s idle, 12–20 s
    /// loaded, measured in a Hummingbird app) to exit and free its port, against milliseconds without
    /// it. Default `.whenUnreported`: only when Blackbox could not write a report. `BLACKBOX_SWIFT_BACKTRACER`
    /// (`always` or `when-unreported`) in the environment overrides it. See docs/crash-capture.md.
    public var swiftBacktracer: SwiftBacktracerPolicy = .whenUnreported
    /// Whether every thread started after `Blackbox.start` (Dispatch and Swift-concurrency workers,
    /// Foundation threads, an app's own) gets an alternate signal stack (64 KiB, mapped on demand)
    /// before its first instruction: without one, a stack overflow kills the process before any
    /// handler runs. Blackbox wraps `pthread_create` for it. Default true. See docs/crash-capture.md.
    public var coverNewThreads = true
    /// How often a Blackbox thread gives every thread that has no alternate signal stack one: threads
    /// started before `Blackbox.start`, or while `coverNewThreads` is off. Default 1 s; nil: off
    /// (threads then call `CrashCapture.prepareCurrentThread()` themselves). See docs/crash-capture.md.
    public var alternateStackSweep: Duration? = .seconds(1)
    /// Free-form values every crash report carries (deployment, region…). Keep it small.
    public var metadata: [String: String] = [:]
    public init() {}
}

/// When the Swift runtime's backtracer (on by default on Linux, `SWIFT_BACKTRACE`) runs after a crash
/// that Blackbox handled.
public enum SwiftBacktracerPolicy: String, Sendable {
    /// Only when Blackbox could not write its report (its directory is gone, the disk is full).
    case whenUnreported = "when-unreported"
    /// After every report as well: its text on stderr, at the cost of a slow exit.
    case always

    /// The policy in effect: `BLACKBOX_SWIFT_BACKTRACER` when it names one, else `configured`.
    static func effective(configured: Self, environment: String?) -> Self {
        environment.flatMap(Self.init(rawValue:)) ?? configured
    }
}
