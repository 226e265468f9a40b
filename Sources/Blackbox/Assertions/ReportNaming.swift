import BlackboxFormat

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif
#if canImport(Glibc)
    import Glibc
#endif

/// Names the frames of non-fatal reports (failed assertions, captured errors) after the code that
/// failed has moved on: one report at a time, on a low-priority thread of its own.
///
/// Naming in-process loads the images' debug info: seconds of CPU the first time in a process (a
/// release server's first captured error held its request 11-23 s that way). The caller now only
/// takes the addresses (`CapturedStack`) and writes the report unnamed, as `<report>.json.unnamed-<pid>`
/// beside the outbox's finished reports (delivery does not take it). Here it is named and put in
/// the outbox proper. What is not named by shutdown (`finish`) is published unnamed (the collector
/// names such frames from uploaded debug files); what a dying process leaves, the next start names
/// as it names crash reports, and publishes (`publishLeftovers`).
final class ReportNaming: @unchecked Sendable {
    static let shared = ReportNaming()

    struct Job: Sendable {
        var report: CrashReport
        let stack: CapturedStack
        let unnamedPath: String
        let outbox: Outbox
        /// The core the report came from: its log tail, its delivery's announcements.
        let core: LoggingCore
    }

    /// Reports waiting beyond this are published unnamed at once: a burst of distinct failures
    /// must not grow memory or delay every later report.
    static let queueLimit = 32
    /// How long shutdown waits for a report being written when its time to name them is up.
    static let publishWait: Duration = .seconds(5)
    static let threadName = "bbx-naming"

    private let lock = ConditionLock()
    // Guarded by `lock`.
    private var queue: [Job] = []
    private var current: Job?
    private var currentPublished = false
    private var threadStarted = false

    /// Writes `report` (frames unnamed) where delivery does not see it yet, and queues it for naming.
    /// Returns the path of the file written.
    func submit(_ report: CrashReport, stack: CapturedStack, outbox: Outbox, core: LoggingCore)
        throws(DurableFile.Failure) -> String
    {
        let owner = LiveProcessMark.mine(in: outbox.directory.outbox)?.token ?? "\(getpid())"
        let path = try outbox.writeJSON(report, suffix: "\(Self.unnamedSuffix)\(owner)")
        let job = Job(report: report, stack: stack, unnamedPath: path, outbox: outbox, core: core)
        let queued = lock.withLock {
            guard queue.count < Self.queueLimit else { return false }
            queue.append(job)
            if !threadStarted {
                threadStarted = true
                startThread(name: Self.threadName) { [self] in run() }
            }
            lock.broadcast()
            return true
        }
        if !queued {
            publishUnnamed(job, note: "its frames were not named here: \(Self.queueLimit) other reports were waiting")
        }
        return path
    }

    /// Waits up to `timeout` for the reports queued so far to be named; publishes the rest unnamed.
    /// For shutdown: nothing submitted stays out of the outbox.
    func finish(within timeout: Duration) {
        let deadline = monotonicNanoseconds() &+ timeout.nanoseconds
        let left: [Job] = lock.withLock {
            while (current != nil || !queue.isEmpty) && monotonicNanoseconds() < deadline {
                lock.wait(untilMonotonic: deadline)
            }
            var left = queue
            queue = []
            // The thread claimed its report (named, being written): that write is its to finish. The
            // process must not stop logging and exit in the middle of it, which left the report
            // unpublished until the next start (seen under load, claimed just before the deadline).
            let threadIsWriting = current != nil && currentPublished
            if let current, !currentPublished {
                currentPublished = true
                left.append(current)
            }
            let writing = monotonicNanoseconds() &+ Self.publishWait.nanoseconds
            while threadIsWriting && current != nil && monotonicNanoseconds() < writing {
                lock.wait(untilMonotonic: writing)
            }
            return left
        }
        for job in left {
            publishUnnamed(job, note: "its frames were not named before the process stopped logging")
        }
    }

    private func run() {
        // Below the app's own threads: naming is the least urgent work in the process.
        setpriority(__priority_which_t(PRIO_PROCESS.rawValue), id_t(currentThreadID()), 10)
        while true {
            let job: Job = lock.withLock {
                while queue.isEmpty { lock.wait(untilMonotonic: monotonicNanoseconds() &+ 3_600_000_000_000) }
                let job = queue.removeFirst()
                current = job
                currentPublished = false
                return job
            }
            var named = job
            if !Self.name(&named.report, from: job.stack, core: job.core) {
                named.report.notes.append("its frames could not be named in the process (no symbols in its images)")
            }
            // Claimed under the lock: `finish` publishes the job itself only when it is not.
            let claimed = lock.withLock {
                defer { currentPublished = true }
                return !currentPublished
            }
            if claimed { publish(named) }
            lock.withLock {
                current = nil
                lock.broadcast()
            }
        }
    }

    /// Fills in what the caller left out: the log tail, then the frames' names. Returns whether any
    /// frame was named. Used here and by a trap's report, which cannot wait for this thread.
    static func name(_ report: inout CrashReport, from stack: CapturedStack, core: LoggingCore) -> Bool {
        report.logTail = logTail(of: core)
        guard let frames = stack.named(), frames.contains(where: { !$0.symbols.isEmpty }) else { return false }
        report.frames = frames
        report.symbolicated = true
        return true
    }

    /// The log tail, taken here, not by the caller: it waits for the writer (up to a second on a
    /// loaded machine) to have written the lines logged before the report. Taken before naming, so
    /// it holds what was logged until the report was picked up (milliseconds after the capture,
    /// unless other reports were waiting).
    private static func logTail(of core: LoggingCore) -> [String] {
        core.recentLines(core.configuration.crashReporting.logTailLines)
    }

    private func publishUnnamed(_ job: Job, note: String) {
        var job = job
        job.report.notes.append(note)
        if job.report.logTail.isEmpty { job.report.logTail = Self.logTail(of: job.core) }
        publish(job)
    }

    /// The report into the outbox proper (delivery takes it from there), the unnamed file gone.
    private func publish(_ job: Job) {
        do {
            let path = try job.outbox.write(job.report)
            unlink(job.unnamedPath)
            job.core.announcements.announce(.reportWritten(path: path))
        } catch {
            InternalDiagnostics.report(
                "cannot write a \(job.report.kind.rawValue) report: \(error)", key: "nonfatal-write")
        }
    }

    // MARK: leftovers of processes that ended first

    static let unnamedSuffix = ".unnamed-"

    /// Publishes the reports processes that have ended left waiting for a name (a crash or a
    /// SIGKILL right after a failed assertion), named the way crash reports are: from the images on
    /// disk (`builder`: llvm-symbolizer, else the symbol tables). A living process's are its own.
    static func publishLeftovers(in directory: DiagnosticsDirectory, builder: CrashReportBuilder) {
        let outbox = Outbox(directory)
        for name in directoryEntries(directory.outbox) {
            // <kind>-<uuid>.json.unnamed-<owner>: the writer's mark (`LiveProcessMark`), or its pid
            // alone (a version before marks, or a process that could not make one).
            let parts = name.split(separator: ".")
            guard parts.count == 3, parts[1] == "json", parts[2].hasPrefix(unnamedSuffix.dropFirst()) else { continue }
            let owner = String(parts[2].dropFirst(unnamedSuffix.count - 1))
            if let pid = Int32(owner) {
                guard pid != getpid(), kill(pid, 0) != 0, errno != EPERM else { continue }
            } else {
                guard LiveProcessMark.owner(of: owner, in: directory.outbox) == .ended else { continue }
            }
            let path = "\(directory.outbox)/\(name)"
            guard let bytes = DurableFile.read(path, limit: 64 << 20), var report = try? CrashReport.decode(Data(bytes))
            else {
                InternalDiagnostics.report("a report left unnamed cannot be read: \(path)", key: "nonfatal-leftover")
                continue
            }
            let images = report.images.map { image in
                CrashReportBuilder.ImageOnDisk(
                    path: image.path, bias: UInt64(image.bias.dropFirst(2), radix: 16) ?? 0, buildID: image.buildID)
            }
            builder.symbolicate(&report, images: images)
            report.frames = CapturedStack.withoutMachinery(report.frames)
            report.notes.append("named when the app started again: the process that wrote it ended first")
            do {
                _ = try outbox.write(report)
                unlink(path)
            } catch {
                InternalDiagnostics.report("cannot write a report left unnamed: \(error)", key: "nonfatal-leftover")
            }
        }
        LiveProcessMark.removeEnded(in: directory.outbox)
    }
}
