import BlackboxFormat
import CCrashHandler

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif
#if canImport(Glibc)
    import Glibc
#endif

/// Writes a `hang` report: every thread's stack, captured the way the crash handler does
/// (`bbx_capture_other_threads`, in a living process), the unresponsive thread first.
enum HangReporter {
    /// The report's path in `core`'s outbox, or nil when the capture failed.
    static func write(_ target: HangTarget, unresponsiveFor silent: UInt64, core: LoggingCore) -> String? {
        let hung = target.lastThread.load(ordering: .relaxed)
        return write(
            reason:
                "\(target.name) did not respond for \(HangWatchdog.seconds(silent)) s (deadline \(HangWatchdog.seconds(target.deadline.nanoseconds)) s)",
            unresponsiveThread: hung,
            notes: hung == 0 ? ["which thread serves \(target.name) is not known yet: the main thread is first"] : [],
            core: core)
    }

    /// A `hang` report: `unresponsiveThread` (0: not known, the main thread) first. A `stall` is no
    /// thread's: its reason says what is stuck, and the report says so (`hang.stall` in its metadata),
    /// so that a reader leads with the reason rather than the main thread's frame.
    static func write(
        reason: String, unresponsiveThread hung: UInt32, notes: [String], stall: Bool = false, core: LoggingCore
    ) -> String? {
        let configuration = core.configuration
        let directory = DiagnosticsDirectory(configuration.directory)
        // Without the other threads (another capture still running) the report still says what hung.
        let lines = captureThreads(scratch: directory.runs) ?? Array("threads-unavailable busy\n".utf8)
        guard var raw = try? RawCrashReport(bytes: Array("blackbox-raw-crash 2\n".utf8) + lines + Array("end\n".utf8))
        else { return nil }
        raw.pid = getpid()
        let builder = BlackboxRuntime.crashReportProcessor(configuration).builder
        var report = builder.build(from: raw)
        report.kind = .hang
        core.reportContext.describe(&report)
        // The builder made a crashed thread of nobody (this one is left out of the capture); the
        // unresponsive thread takes its place: the one that last showed life, else the main thread.
        var others = Array((report.threads ?? []).dropFirst())
        report.thread = .init(id: hung != 0 ? Int32(bitPattern: hung) : getpid(), name: nil)
        let index =
            others.firstIndex { $0.id == Int32(bitPattern: hung) } ?? others.firstIndex { $0.id == getpid() } ?? 0
        if others.indices.contains(index) {
            var first = others.remove(at: index)
            first.crashed = true
            // The request the blocked thread was serving is the report's scope, as a crash's is.
            report.scope = first.scope
            first.scope = nil
            report.threads = [first] + others
            report.thread = .init(id: first.id, name: first.name)
            report.frames = first.frames
            report.frameSource = first.frameSource
        }
        report.reason = reason
        if stall { report.metadata["hang.stall"] = "true" }
        report.notes = report.notes.filter { !$0.hasPrefix("no libunwind walk") } + notes
        report.logTail = core.recentLines(configuration.crashReporting.logTailLines)
        // If the run never recovers, the next start counts its session as hung, not killed. Marked
        // before the report is published: whoever sees the report (a supervisor, a test) and kills
        // the process must find the run already recorded as hung.
        RunRecord.mark(.hung, pid: getpid(), in: directory)
        do {
            let path = try Outbox(directory).write(report)
            core.announcements.announce(.reportWritten(path: path))
            return path
        } catch {
            InternalDiagnostics.report("cannot write a hang report: \(error)", key: "hang-write")
            return nil
        }
    }

    /// The capture's raw lines, through an unlinked scratch file (the capture writes to a
    /// descriptor; a pipe would fill up before it is read).
    private static func captureThreads(scratch directory: String) -> [UInt8]? {
        try? makeDirectory(directory)
        var template = Array("\(directory)/.threads-XXXXXX".utf8CString)
        let fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard fd >= 0 else { return nil }
        template.withUnsafeBufferPointer { _ = unlink($0.baseAddress!) }
        defer { close(fd) }
        guard bbx_capture_other_threads(fd) == 0 else { return nil }
        let size = lseek(fd, 0, SEEK_END)
        guard size > 0 else { return nil }
        var bytes = [UInt8](repeating: 0, count: Int(size))
        let count = bytes.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, 0) }
        return count == Int(size) ? bytes : nil
    }
}
