import BlackboxFormat
import Synchronization

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif
#if canImport(Glibc)
    import Glibc
#endif

/// What a running process leaves in `runs/<pid>.json` from its start until its clean exit, so that the
/// next start can tell a run that died unseen (SIGKILL, the OOM killer, a power loss) and say what it
/// knows about it.
package struct RunRecord: Codable, Equatable {
    package var pid: Int32
    /// Seconds since the epoch (the kernel's start time of the process, so a reused pid is told apart).
    package var startTime: Double
    var appName: String
    package var appVersion: String?
    var appBuild: String?
    var bootID: String?
    /// The memory cgroup's OOM-kill counter file and its value at start.
    var cgroupEventsFile: String?
    var cgroupOOMKills: Int?
    var machineOOMKills: Int?
    /// Where the run's lines go (`file`, `stderr (text)`, `stdout (JSON Lines)`), for `blackbox doctor`.
    package var outputs: [String]?
    /// The start in clock ticks after boot (`ProcessFacts.startTicks`): which process had the pid, to
    /// the tick, where `startTime` is a second off at worst. Absent in records of earlier versions.
    var startTicks: UInt64?

    /// This process, now.
    static func current(appName: String, appVersion: String?, appBuild: String?, outputs: [String]? = nil)
        -> RunRecord
    {
        let eventsFile = ProcessFacts.memoryCgroupEventsFile()
        let ticks = ProcessFacts.startTicks(of: getpid())
        return RunRecord(
            pid: getpid(),
            startTime: ticks.flatMap(ProcessFacts.startTime(afterBootTicks:)) ?? Date().timeIntervalSince1970,
            appName: appName, appVersion: appVersion, appBuild: appBuild, bootID: ProcessFacts.bootID(),
            cgroupEventsFile: eventsFile, cgroupOOMKills: eventsFile.flatMap(ProcessFacts.cgroupOOMKills),
            machineOOMKills: ProcessFacts.machineOOMKills(), outputs: outputs, startTicks: ticks)
    }

    /// Whether the process the record names still runs: this process's own record (a second
    /// `Blackbox.start` in one process) included, an earlier process's under the same pid not.
    var isRunning: Bool { ProcessFacts.isRunning(pid, startedAt: startTime, ticks: startTicks) }

    package static func path(pid: Int32, in directory: DiagnosticsDirectory) -> String {
        "\(directory.runs)/\(pid).json"
    }

    func write(in directory: DiagnosticsDirectory) throws(DurableFile.Failure) {
        do {
            try makeDirectory(directory.runs)
        } catch {
            throw DurableFile.Failure(path: directory.runs, reason: error.description)
        }
        let bytes: Data
        do {
            bytes = try JSONEncoder().encode(self)
        } catch {
            throw DurableFile.Failure(path: directory.runs, reason: "cannot encode the run record: \(error)")
        }
        try DurableFile.write(Array(bytes), to: Self.path(pid: pid, in: directory))
    }

    /// Every record in `runs/`; unreadable ones are removed (a half-written record says nothing).
    package static func all(in directory: DiagnosticsDirectory) -> [(path: String, record: RunRecord)] {
        directoryEntries(directory.runs).filter { $0.hasSuffix(".json") }.sorted().compactMap { name in
            let path = "\(directory.runs)/\(name)"
            guard let bytes = DurableFile.read(path, limit: 64 << 10),
                let record = try? JSONDecoder().decode(RunRecord.self, from: Data(bytes))
            else {
                unlink(path)
                return nil
            }
            return (path, record)
        }
    }
}

/// The record of the running process, kept by its runtime: written by `Blackbox.start`, removed by a
/// clean exit (`exit`, a return from `main`, the runtime's shutdown). A forked child shares the
/// parent's atexit handlers; only the process the record names removes it.
final class CurrentRun: Sendable {
    private let state = Mutex<(record: RunRecord, directory: DiagnosticsDirectory)?>(nil)
    /// atexit handlers belong to the process and cannot be removed: one hook, registered with the
    /// first run recorded, ends the run of whichever runtime is running at exit.
    private static let exitHookRegistered = Atomic<Bool>(false)

    func begin(_ record: RunRecord, in directory: DiagnosticsDirectory) {
        do {
            try record.write(in: directory)
        } catch {
            InternalDiagnostics.report("cannot record the run for unseen-death detection: \(error)")
            return
        }
        state.withLock { $0 = (record, directory) }
        RequestTally.shared.begin(pid: record.pid, in: directory)
        if Self.exitHookRegistered.compareExchange(expected: false, desired: true, ordering: .relaxed).exchanged {
            atexit { Blackbox.current?.run.end() }
        }
    }

    /// The run ended cleanly: it is counted as a clean session, and its record goes.
    func end() {
        let current = state.withLock { state in
            defer { state = nil }
            return state
        }
        guard let (record, directory) = current, record.pid == getpid() else { return }
        RequestTally.shared.end()
        record.recordEnd(.clean, at: Date(), in: directory)
        unlink(RunRecord.path(pid: record.pid, in: directory))
    }
}

extension RunRecord {
    /// What a run leaves beside its record when something happens that decides how it ends: `hung` (a
    /// hang report was written), `crashed` (`blackbox deliver-crash` sent its raw report, which is gone).
    package enum Marker: String {
        case hung, crashed
    }

    package static func markerPath(_ marker: Marker, pid: Int32, in directory: DiagnosticsDirectory) -> String {
        "\(directory.runs)/\(pid).\(marker.rawValue)"
    }

    package static func mark(_ marker: Marker, pid: Int32, in directory: DiagnosticsDirectory) {
        try? DurableFile.write([], to: markerPath(marker, pid: pid, in: directory))
    }

    func hasMarker(_ marker: Marker, in directory: DiagnosticsDirectory) -> Bool {
        access(Self.markerPath(marker, pid: pid, in: directory), F_OK) == 0
    }

    /// The run as a session that ended with `outcome` at `end`, with the requests it counted (those in
    /// flight at an unclean end were cut short by it).
    func session(ending outcome: EndedSession.Outcome, at end: Date, in directory: DiagnosticsDirectory)
        -> EndedSession
    {
        EndedSession(
            appVersion: appVersion, startTime: Date(timeIntervalSince1970: startTime), endTime: end, outcome: outcome,
            requests: RequestTally.counts(pid: pid, in: directory, cutShort: outcome != .clean))
    }

    /// Counts the run as a session that ended with `outcome` (`runs/ended/`, until a bundle carries
    /// it), and removes its markers.
    func recordEnd(_ outcome: EndedSession.Outcome, at end: Date, in directory: DiagnosticsDirectory) {
        let session = session(ending: outcome, at: end, in: directory)
        let path = "\(directory.endedSessions)/\(EndedSession.fileName(startTime: session.startTime, pid: pid))"
        do {
            try makeDirectory(directory.endedSessions)
            try DurableFile.write(Array(try JSONEncoder().encode(session)), to: path)
        } catch {
            InternalDiagnostics.report("cannot count the run's session: \(error)", key: "session-count")
        }
        for marker in [Marker.hung, .crashed] { unlink(Self.markerPath(marker, pid: pid, in: directory)) }
        RequestTally.remove(pid: pid, in: directory)
    }
}
