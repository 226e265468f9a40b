import BlackboxFormat

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif
#if canImport(Glibc)
    import Glibc
#endif

/// At start, a `termination` report for each earlier run that neither exited cleanly (its record is
/// still in `runs/`) nor left a crash report of its own, and is not running any more: it was killed
/// (SIGKILL, the OOM killer, an unhandled SIGTERM) or the machine went down under it. Every such run
/// is counted as a session that ended `crashed`, `hung` (it wrote a hang report) or `killed`.
struct UnseenDeaths {
    var directory: DiagnosticsDirectory
    /// The active log file, whose tail holds the dead run's last lines (start-up replays what the
    /// journal held into it before this runs).
    var logFile: String?
    var logTailLines = 50
    var host = CrashCapture.currentHost()

    /// Writes the reports; their paths.
    func reportAll() -> [String] {
        let now = Date()
        var written: [String] = []
        for (path, record) in RunRecord.all(in: directory) {
            // This process's own, or another process using the same directory, still running.
            if record.isRunning { continue }
            if leftCrashReport(record) || record.hasMarker(.crashed, in: directory) {
                record.recordEnd(.crashed, at: now, in: directory)
                unlink(path)
                continue
            }
            do {
                written.append(try Outbox(directory).write(report(for: record, detectedAt: now)))
                record.recordEnd(record.hasMarker(.hung, in: directory) ? .hung : .killed, at: now, in: directory)
                unlink(path)
            } catch {
                InternalDiagnostics.report("cannot write the termination report of pid \(record.pid): \(error)")
            }
        }
        return written
    }

    /// Whether the signal handler wrote a raw report for the run (`crash-<time>-<pid>-<signal>.raw`,
    /// pending, being processed or quarantined): a crash has its own report.
    func leftCrashReport(_ record: RunRecord) -> Bool {
        let names = directoryEntries(directory.pendingCrashes) + directoryEntries(directory.quarantine)
        return names.compactMap(PendingCrashFile.init(name:)).contains { file in
            file.writerPID == record.pid && (file.crashSeconds ?? 0) >= record.startTime.rounded(.down)
        }
    }

    func report(for record: RunRecord, detectedAt: Date) -> CrashReport {
        let started = Date(timeIntervalSince1970: record.startTime)
        let lines = lastLines(since: started, before: detectedAt)
        let lastSeen = lines.last.flatMap(Self.time(of:)) ?? started
        var report = CrashReport(
            kind: .termination,
            app: .init(name: record.appName, version: record.appVersion, build: record.appBuild), host: host,
            process: .init(pid: record.pid, startTime: started, crashTime: lastSeen),
            thread: .init(id: record.pid, name: nil))
        let (cause, reason, after) = cause(of: record)
        report.reason = reason
        report.logTail = lines
        report.termination = .init(
            cause: cause, lastSeenAlive: lastSeen, detectedAt: detectedAt, cgroupOOMKillsBefore: record.cgroupOOMKills,
            cgroupOOMKillsAfter: after)
        report.notes.append(
            "the run left no report of its own: it ended after \(ReportTime.format(lastSeen)) (its last sign of life) and before \(ReportTime.format(detectedAt)) (when the next start noticed)"
        )
        return report
    }

    /// What Linux says, strongest evidence first; with the cgroup counter's value now.
    func cause(of record: RunRecord) -> (cause: String, reason: String, cgroupOOMKillsNow: Int?) {
        let now = record.cgroupEventsFile.flatMap(ProcessFacts.cgroupOOMKills)
        if let before = record.cgroupOOMKills, let now, now > before {
            return (
                "oom-killer",
                "killed by the OOM killer (its memory cgroup's oom_kill counter went from \(before) to \(now))", now
            )
        }
        let currentBoot = ProcessFacts.bootID()
        if let recorded = record.bootID, let currentBoot, recorded != currentBoot {
            return ("machine-restart", "the machine restarted while it ran (power loss, kernel crash or reboot)", now)
        }
        if let before = record.machineOOMKills, let machine = ProcessFacts.machineOOMKills(), machine > before {
            return (
                "oom-killer",
                "probably killed by the OOM killer (the machine's oom_kill counter went from \(before) to \(machine) while it ran)",
                now
            )
        }
        // Nothing says which: a kill and a crash no handler could catch leave the same trace. The
        // likeliest causes are named, a stack overflow before the thread had an alternate stack among them.
        return (
            "unknown",
            "ended without a report: killed (SIGKILL, an unhandled SIGTERM or SIGINT, a watchdog) or crashed where no handler could run (a stack overflow on a thread that had no alternate signal stack yet)",
            now
        )
    }

    /// The log file's last lines stamped within the run (continuation lines of a kept line too).
    func lastLines(since start: Date, before end: Date) -> [String] {
        guard let logFile, let bytes = Self.tail(of: logFile, bytes: 256 << 10) else { return [] }
        var kept: [String] = []
        var keeping = false
        for line in String(decoding: bytes, as: UTF8.self).split(separator: "\n") {
            if let time = Self.time(of: String(line)) {
                // A second's slack: the process start time is in clock ticks.
                keeping = time >= start.addingTimeInterval(-1) && time < end
            }
            if keeping { kept.append(String(line)) }
        }
        return Array(kept.suffix(logTailLines))
    }

    /// The ISO-8601 time a text log line starts with.
    static func time(of line: String) -> Date? {
        guard line.count >= 24 else { return nil }
        return ReportTime.parse(String(line.prefix(24)))
    }

    private static func tail(of path: String, bytes limit: Int) -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        let size = lseek(fd, 0, SEEK_END)
        guard size >= 0 else { return nil }
        let start = max(0, Int(size) - limit)
        var buffer = [UInt8](repeating: 0, count: Int(size) - start)
        let count = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, off_t(start)) }
        guard count >= 0 else { return nil }
        // Drop a first line cut in the middle.
        var result = Array(buffer.prefix(count))
        if start > 0, let newline = result.firstIndex(of: 0x0A) { result.removeFirst(newline + 1) }
        return result
    }
}
