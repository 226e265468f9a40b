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
struct RunRecord: Codable, Equatable {
    var pid: Int32
    /// Seconds since the epoch (the kernel's start time of the process, so a reused pid is told apart).
    var startTime: Double
    var appName: String
    var appVersion: String?
    var appBuild: String?
    var bootID: String?
    /// The memory cgroup's OOM-kill counter file and its value at start.
    var cgroupEventsFile: String?
    var cgroupOOMKills: Int?
    var machineOOMKills: Int?

    /// This process, now.
    static func current(appName: String, appVersion: String?, appBuild: String?) -> RunRecord {
        let eventsFile = ProcessFacts.memoryCgroupEventsFile()
        return RunRecord(
            pid: getpid(), startTime: ProcessFacts.startTime(of: getpid()) ?? Date().timeIntervalSince1970,
            appName: appName, appVersion: appVersion, appBuild: appBuild, bootID: ProcessFacts.bootID(),
            cgroupEventsFile: eventsFile, cgroupOOMKills: eventsFile.flatMap(ProcessFacts.cgroupOOMKills),
            machineOOMKills: ProcessFacts.machineOOMKills())
    }

    static func path(pid: Int32, in directory: DiagnosticsDirectory) -> String { "\(directory.runs)/\(pid).json" }

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
    static func all(in directory: DiagnosticsDirectory) -> [(path: String, record: RunRecord)] {
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

/// The record of the running process: written by `Blackbox.start`, removed by a clean exit (`exit`,
/// a return from `main`, `Blackbox.shutdown`). A forked child shares the parent's atexit handlers;
/// only the process the record names removes it.
enum CurrentRun {
    private static let state = Mutex<(path: String, pid: Int32)?>(nil)
    private static let exitHookRegistered = Atomic<Bool>(false)

    static func begin(_ record: RunRecord, in directory: DiagnosticsDirectory) {
        do {
            try record.write(in: directory)
        } catch {
            InternalDiagnostics.report("cannot record the run for unseen-death detection: \(error)")
            return
        }
        state.withLock { $0 = (RunRecord.path(pid: record.pid, in: directory), record.pid) }
        if exitHookRegistered.compareExchange(expected: false, desired: true, ordering: .relaxed).exchanged {
            atexit { CurrentRun.end() }
        }
    }

    /// The run ended cleanly.
    static func end() {
        let current = state.withLock { state in
            defer { state = nil }
            return state
        }
        if let current, current.pid == getpid() { unlink(current.path) }
    }
}
