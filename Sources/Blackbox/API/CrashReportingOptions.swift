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
    /// Free-form values every crash report carries (deployment, region…). Keep it small.
    public var metadata: [String: String] = [:]
    public init() {}
}
