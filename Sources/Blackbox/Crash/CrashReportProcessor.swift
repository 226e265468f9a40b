import BlackboxFormat
import BlackboxSystem
import Synchronization

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

#if canImport(Glibc)
    import Glibc
#endif

/// The next-launch half of crash capture: raw reports in `crashes/pending/` become JSON and text
/// reports in `outbox/`.
///
/// Crash-safety of the processing itself (the states are in the file's name: `PendingCrashFile`):
/// - A pass never takes a report of its own process (the handler may be writing it while the
///   process dies), nor one whose writer is alive and has not finished it.
/// - A raw file is renamed to `<name>.processing-<pid>-<attempt>` before it is read. Finding such a
///   file whose processor is dead means the attempt ended with that process. It is quarantined
///   (moved to `crashes/quarantine/`, so a poisonous report cannot make the app crash-loop at
///   start-up) only on evidence that processing it is what killed the process: the processor's own
///   crash report shows the crash on the processing thread, or `maxAttempts` attempts ended with
///   a death nothing explains (no crash report of the processor). Otherwise it is retried: the
///   process most often died of something else (a crash elsewhere right after start, a kill).
/// - The raw file is deleted only after both outputs and the outbox directory are fsynced.
public struct CrashReportProcessor: Sendable {
    public let directory: String
    public var symbolizerPath: String?
    public var debugFileDirectories: [String] = []
    public var logTailLines = 50

    /// Attempts that may end with the processing process's death before a report is quarantined.
    public static let maxAttempts = 3
    /// The name of the thread `Blackbox.start` processes reports on: a crash on it is evidence
    /// against the report it was processing.
    static let processingThreadName = "bbx-crash-proc"
    /// How long a report whose writer still runs (or whose processor still runs) is left alone:
    /// past this, the pid must have been reused.
    static let stillWorkingWindow: Double = 600

    public init(directory: String) {
        self.directory = directory
    }

    var layout: DiagnosticsDirectory { DiagnosticsDirectory(directory) }

    public struct Outcome: Sendable {
        /// Reports now in the outbox, with the path of their JSON file.
        public var processed: [(report: CrashReport, path: String)] = []
        /// Raw files moved to quarantine (their processing crashed earlier, or they are not reports).
        public var quarantined: [String] = []
        /// Files that could not be handled now (I/O errors); they stay pending.
        public var failures: [String] = []
        /// Files left for later: being written by a live process, or processed by another one now.
        public var skipped: [String] = []
    }

    /// Processes every pending raw report, or until `shouldContinue` says stop (checked before each;
    /// the rest stay pending). Safe to call at any time; does nothing when there are none.
    public func processPending(while shouldContinue: () -> Bool = { true }) -> Outcome {
        var outcome = Outcome()
        let files = directoryEntries(layout.pendingCrashes).compactMap(PendingCrashFile.init(name:))
            .sorted { $0.rawName < $1.rawName }
        guard !files.isEmpty else { return outcome }
        do {
            try makeDirectory(layout.outbox)
            try makeDirectory(layout.quarantine)
        } catch {
            outcome.failures.append(error.description)
            return outcome
        }
        let me = getpid()
        var waiting: [PendingCrashFile] = []
        for file in files {
            guard file.processor != nil else {
                waiting.append(file)
                continue
            }
            if let retry = judgeInterrupted(file, me: me, into: &outcome) { waiting.append(retry) }
        }
        let builder = self.builder
        for file in waiting {
            guard shouldContinue() else { break }
            let raw = path(file)
            // This process's own crash: the handler may still be writing it, and the process is dying.
            if file.writerPID == me, mayBeWriter(me, of: file) {
                outcome.skipped.append(raw)
                continue
            }
            guard let bytes = DurableFile.read(raw) else {
                outcome.failures.append("\(raw): \(errnoDescription())")
                continue
            }
            let parsed = try? RawCrashReport(bytes: bytes)
            if parsed?.complete != true, let writer = file.writerPID, mayBeWriter(writer, of: file),
                changedRecently(raw)
            {
                outcome.skipped.append(raw)
                continue
            }
            let taken = file.takenBy(me)
            let processing = path(taken)
            guard rename(raw, processing) == 0 else {
                outcome.failures.append("\(raw): \(errnoDescription())")
                continue
            }
            DurableFile.syncDirectory(containing: processing)
            InProgress.begin(processing: processing, raw: raw)
            defer { InProgress.end(processing: processing) }
            guard let parsed else {
                quarantine(
                    taken.name, as: file.rawName, because: "\(RawCrashReport.ParseError.notARawReport)",
                    into: &outcome)
                continue
            }
            var report = builder.build(from: parsed)
            report.id = UUID(derivedFrom: Array(file.rawName.utf8) + bytes)
            report.notes.append("processed from \(file.rawName)")
            // Committed under the in-progress lock: an exit meanwhile waits for it, or has already
            // put the raw report back (then this run leaves it for the next start).
            InProgress.commit(processing: processing) { () -> Void in
                do {
                    let path = try Outbox(layout).write(report)
                    unlink(processing)
                    DurableFile.syncDirectory(containing: processing)
                    outcome.processed.append((report, path))
                } catch {
                    outcome.failures.append("\(error)")
                    rename(processing, raw)
                }
            }
        }
        return outcome
    }

    /// A report whose processing was interrupted: left alone while its processor works on it, else
    /// quarantined on evidence, else returned to be retried (renamed to its retry name).
    private func judgeInterrupted(_ file: PendingCrashFile, me: Int32, into outcome: inout Outcome)
        -> PendingCrashFile?
    {
        let current = path(file)
        if let processor = file.processor?.pid, processor == me ? InProgress.contains(current) : isAlive(processor),
            changedRecently(current)
        {
            outcome.skipped.append(current)
            return nil
        }
        let processorCrash = file.processor?.pid.flatMap { crashedOnProcessingThread($0) }
        if processorCrash == true, let processor = file.processor?.pid {
            quarantine(
                file.name, as: file.rawName,
                because:
                    "processing it crashed the app (pid \(processor) crashed on its \(Self.processingThreadName) thread)",
                into: &outcome)
            return nil
        }
        // A processor that crashed elsewhere is no evidence against the report; one that died
        // without a report of its own (killed, or a crash that left none) counts as an attempt.
        let retry = processorCrash == false ? file.released() : file.afterFailedAttempt()
        if retry.attempts >= Self.maxAttempts {
            quarantine(
                file.name, as: file.rawName,
                because: "the process processing it died unexplained at \(retry.attempts) starts", into: &outcome)
            return nil
        }
        guard rename(current, path(retry)) == 0 else {
            outcome.failures.append("\(current): \(errnoDescription())")
            return nil
        }
        DurableFile.syncDirectory(containing: path(retry))
        return retry
    }

    /// Whether `pid`'s own crash report names the processing thread as the crashed one; nil when
    /// `pid` left no crash report.
    private func crashedOnProcessingThread(_ pid: Int32) -> Bool? {
        var found: Bool?
        for directory in [layout.pendingCrashes, layout.quarantine] {
            for name in directoryEntries(directory) {
                guard let file = PendingCrashFile(name: name), file.writerPID == pid, file.processor == nil,
                    let bytes = DurableFile.read("\(directory)/\(name)"), let raw = try? RawCrashReport(bytes: bytes)
                else { continue }
                if raw.threadName == Self.processingThreadName { return true }
                found = false
            }
        }
        return found
    }

    private func path(_ file: PendingCrashFile) -> String { "\(layout.pendingCrashes)/\(file.name)" }

    private func isAlive(_ pid: Int32) -> Bool { pid > 0 && (kill(pid, 0) == 0 || errno == EPERM) }

    /// Whether the process running as `pid` may be the one that crashed into `file`. A pid runs again
    /// once its process is gone, and a container's app has the same pid at every start (pid 1 without
    /// an init): a process that started after the crash is another one, and its pid says nothing
    /// about the report. Start times from /proc may be a second off (the boot time is whole seconds),
    /// the crash time is whole seconds: two seconds apart or less counts as maybe. Without /proc, maybe.
    private func mayBeWriter(_ pid: Int32, of file: PendingCrashFile) -> Bool {
        guard isAlive(pid) else { return false }
        guard let crashed = file.crashSeconds, let started = ProcessFacts.startTime(of: pid) else { return true }
        return started < crashed + 2
    }

    /// Whether the file changed state (written, renamed) within `stillWorkingWindow`.
    private func changedRecently(_ path: String) -> Bool {
        var status = stat()
        guard stat(path, &status) == 0 else { return false }
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return Double(now.tv_sec - status.st_ctim.tv_sec) < Self.stillWorkingWindow
    }

    /// Turns one raw report file into a report without touching any directory (the CLI's `show`).
    package static func report(
        fromRawFile path: String, symbolizerPath: String? = nil, debugFileDirectories: [String] = []
    ) throws -> CrashReport {
        guard let bytes = DurableFile.read(path) else {
            throw DurableFile.Failure(SystemError("read", path: path))
        }
        let raw = try RawCrashReport(bytes: bytes)
        var builder = CrashReportBuilder(symbolicator: Symbolicator.locate(configured: symbolizerPath))
        builder.symbolicator?.debugFileDirectories = debugFileDirectories
        return builder.build(from: raw)
    }

    /// How this processor turns raw reports into reports (also used for hang reports).
    var builder: CrashReportBuilder {
        var builder = CrashReportBuilder(
            symbolicator: Symbolicator.locate(configured: symbolizerPath), logTailLines: logTailLines)
        builder.symbolicator?.debugFileDirectories = debugFileDirectories
        return builder
    }

    private func quarantine(_ name: String, as target: String, because reason: String, into outcome: inout Outcome) {
        let destination = "\(layout.quarantine)/\(target)"
        if rename("\(layout.pendingCrashes)/\(name)", destination) == 0 {
            DurableFile.syncDirectory(containing: destination)
            outcome.quarantined.append(destination)
            InternalDiagnostics.say("quarantined crash report \(destination): \(reason)")
        } else {
            outcome.failures.append("\(layout.pendingCrashes)/\(name): \(errnoDescription())")
        }
    }
}

/// The raw reports being processed now (by any processor of this process). A clean exit meanwhile
/// (a short-lived program whose start began processing) puts them back as `.raw`: left as
/// `.raw.processing`, the next start would take them for reports whose processing crashed the app
/// and quarantine them. A crash leaves them, as it should.
private enum InProgress {
    /// `.processing` path → the `.raw` path it came from.
    private static let current = Mutex<[String: String]>([:])
    private static let exitHookRegistered = Atomic<Bool>(false)

    static func begin(processing: String, raw: String) {
        current.withLock { $0[processing] = raw }
        if exitHookRegistered.compareExchange(expected: false, desired: true, ordering: .relaxed).exchanged {
            atexit { InProgress.putBack() }
        }
    }

    static func end(processing: String) { current.withLock { $0[processing] = nil } }

    static func contains(_ processing: String) -> Bool { current.withLock { $0[processing] != nil } }

    /// Runs `body` if the report is still being processed (not put back by an exit).
    static func commit(processing: String, _ body: () -> Void) {
        current.withLock { current in
            guard current[processing] != nil else { return }
            body()
        }
    }

    private static func putBack() {
        current.withLock { current in
            for (processing, raw) in current where rename(processing, raw) == 0 {
                DurableFile.syncDirectory(containing: raw)
            }
            current = [:]
        }
    }
}

extension CrashReportProcessor {
    /// What the `blackbox` CLI does to a dead app's directory before it uploads it, as the app's next
    /// start would: pending raw crash reports become outbox reports, and the non-fatal reports the
    /// app could not name before it died are named. Without this the CLI sent the failed `ensure`
    /// and left the crash that followed it in `crashes/pending/`.
    package func processForUpload() -> Outcome {
        let outcome = processPending()
        ReportNaming.publishLeftovers(in: layout, builder: builder)
        return outcome
    }
}
