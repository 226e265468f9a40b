import BlackboxFormat

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif
#if canImport(Glibc)
    import Glibc
#endif

/// Writes `nonfatal` and `error` reports to one core's outbox: the same JSON as crash reports, with
/// the caller's stack, named in-process by Swift's `Runtime` module (demangled names, inlined frames,
/// file:line) after the caller has moved on (`ReportNaming`). The running `BlackboxRuntime` owns one.
struct AssertionReporter: Sendable {
    let core: LoggingCore

    /// The running runtime's reporter, or else one for the only core an app or tool built itself
    /// (nil when there is neither: the failure is then only logged).
    static var current: AssertionReporter? {
        Blackbox.current?.assertions ?? LoggingCore.onlyRunning.map(AssertionReporter.init)
    }

    /// Takes the caller's stack and writes the report to `current`'s outbox, if any; returns the stack
    /// as text for the log line either way. The frames are named later (`ReportNaming`), or now when
    /// `nameNow` (the process is about to trap: nothing later would).
    @discardableResult
    static func report(_ failure: AssertionFailure, suppressed: Int, nameNow: Bool = false) -> String {
        let stack = CapturedStack.capture()
        current?.write(
            kind: .nonfatal, reason: failure.summary,
            metadata: [
                "assertion": failure.kind.rawValue, "location": failure.location, "level": failure.level.rawValue,
            ], suppressed: suppressed, stack: stack, nameNow: nameNow)
        guard let stack else { return "(no backtrace)" }
        return CapturedStack.text(stack.unnamedFrames, images: stack.reportImages)
    }

    /// A non-fatal report (a failed assertion, a captured error) of the calling thread, with the
    /// current task's scope. Its frames are addresses until `ReportNaming` names them.
    func write(
        kind: CrashReport.Kind, reason: String, metadata: [String: String], suppressed: Int, stack: CapturedStack?,
        nameNow: Bool = false
    ) {
        let configuration = core.configuration
        var report = core.reportContext.report(
            kind, thread: .init(id: Int32(bitPattern: currentThreadID()), name: Self.currentThreadName()))
        report.reason = reason
        report.frames = stack?.unnamedFrames ?? []
        report.images = stack?.reportImages ?? []
        report.frameSource = "runtime"
        report.symbolicated = false
        report.metadata.merge(metadata) { _, new in new }
        report.scope = Blackbox.scope?.reportScope
        if suppressed > 0 { report.notes.append("\(suppressed) more failures at this call site since the last report") }
        let outbox = Outbox(DiagnosticsDirectory(configuration.directory))
        do {
            if let stack, !nameNow {
                _ = try ReportNaming.shared.submit(report, stack: stack, outbox: outbox, core: core)
            } else {
                if let stack {
                    _ = ReportNaming.name(&report, from: stack, core: core)
                } else {
                    report.logTail = core.recentLines(configuration.crashReporting.logTailLines)
                }
                let path = try outbox.write(report)
                core.announcements.announce(.reportWritten(path: path))
            }
        } catch {
            InternalDiagnostics.report("cannot write a \(kind.rawValue) report: \(error)", key: "nonfatal-write")
        }
    }

    private static func currentThreadName() -> String? {
        guard let bytes = DurableFile.read("/proc/thread-self/comm", limit: 64) else { return nil }
        let name = String(decoding: bytes, as: UTF8.self).split(separator: "\n").first.map(String.init)
        return name?.isEmpty == false ? name : nil
    }
}
