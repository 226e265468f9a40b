import BlackboxFormat
import Logging

/// One failed assertion: what to log, whether to report (rate limit per call site), how to trap.
struct AssertionFailure {
    enum Kind: String {
        case ensure, bug, unreachable
    }

    let kind: Kind
    let message: String
    var level: Logger.Level = .critical
    let file: StaticString
    let function: StaticString
    let line: UInt

    var location: String { "\(file):\(line)" }
    var summary: String {
        "\(kind.rawValue) failed\(message.isEmpty ? "" : ": \(message)") in \(function)"
    }

    private static let logger = Logger(label: "blackbox.assertions")

    func handle(trap: Bool) {
        let (due, suppressed) = CallSiteLimiter.shared.shouldReport(CallSiteKey(file: "\(file)", line: line))
        if trap {
            Self.logger.critical("\(summary)", file: "\(file)", function: "\(function)", line: line)
            // The line must be in the file before the process dies (the journal would recover it on the
            // next start anyway, but a developer looks at the file now).
            Blackbox.flush(timeout: .seconds(1))
            // With crash capture installed the trap itself produces the crash report (with this text as
            // the fatal message); without it, write a non-fatal report first so nothing is lost.
            if !CrashCapture.isInstalled {
                AssertionReporter.report(self, suppressed: suppressed, nameNow: true)
            }
            fatalError(summary, file: file, line: line)
        }
        guard due else { return }
        var text = summary
        if suppressed > 0 { text += " [\(suppressed) more failures here since the last report]" }
        let backtrace = AssertionReporter.report(self, suppressed: suppressed)
        Self.logger.log(
            level: level, "\(text)\n\(backtrace)", metadata: ["assertion": "\(kind.rawValue)"], file: "\(file)",
            function: "\(function)", line: line)
    }
}
