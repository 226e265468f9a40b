import BlackboxFormat
import BlackboxTestSupport
import Foundation
import Testing

@testable import Blackbox

/// Runs that die without a report of their own get a `termination` report at the next start
/// (issue 19, item 4).
@Suite("Deaths nobody saw", .serialized)
struct UnseenDeathTests {
    var executable: String { "\(Build.debug.binDirectory ?? "")/blackbox-crash-child" }

    /// The next launch of the app: `Blackbox.start` writes termination reports before it returns.
    func nextStart(_ directory: TemporaryDirectory) throws -> [CrashReport] {
        let result = try runProgram(executable, [directory.path, "process-pending", "next"])
        #expect(result.status == 0 && !result.signaled, "\(result.stderr)")
        return try terminationReports(directory)
    }

    func terminationReports(_ directory: TemporaryDirectory) throws -> [CrashReport] {
        let outbox = DiagnosticsDirectory(directory.path).outbox
        return try directoryEntries(outbox).filter { $0.hasPrefix("termination-") && $0.hasSuffix(".json") }
            .map { try CrashReport.decode(Data(contentsOf: URL(fileURLWithPath: "\(outbox)/\($0)"))) }
    }

    func startAndKill(_ directory: TemporaryDirectory) throws -> Int32 {
        let process = try startProgram(
            executable, [directory.path, "wait-to-be-killed", "main"], environment: ["SWIFT_BACKTRACE": "enable=no"])
        let pid = process.processIdentifier
        kill(pid, SIGKILL)
        #expect(try process.waitForOutcome().signal == SIGKILL)
        return pid
    }

    @Test("an earlier run under this process's pid, started within the same second, is not taken for this one")
    func earlierRunUnderThisPid() throws {
        // A container's app has the same pid at every start; a start-up crash loop restarts it within
        // a second. The start in ticks tells the runs apart where the start in seconds cannot.
        let directory = TemporaryDirectory()
        let layout = DiagnosticsDirectory(directory.path)
        let current = RunRecord.current(appName: "app", appVersion: "1", appBuild: nil)
        let ticks = try #require(current.startTicks, "needs /proc")
        try #require(ticks > 50)
        #expect(current.pid == getpid() && current.isRunning, "this process's own record")
        var earlier = current
        earlier.startTicks = ticks - 50  // half a second earlier at 100 ticks a second
        earlier.startTime -= 0.5
        #expect(earlier.pid == getpid() && !earlier.isRunning, "an earlier process's under this pid")
        try earlier.write(in: layout)
        #expect(UnseenDeaths(directory: layout).reportAll().count == 1, "the earlier run's death is reported")
        try current.write(in: layout)
        #expect(UnseenDeaths(directory: layout).reportAll().isEmpty, "this process's own record is left")
    }

    @Test("a SIGKILLed run gets exactly one termination report with its last lines, once")
    func killed() throws {
        let directory = TemporaryDirectory()
        let pid = try startAndKill(directory)
        let reports = try nextStart(directory)
        #expect(reports.count == 1)
        let report = try #require(reports.first)
        #expect(report.kind == .termination && report.process.pid == pid)
        #expect(report.app.name == "crash-child" && report.app.version == "1.0" && report.app.build == "42")
        #expect(report.termination?.cause == "unknown", "\(report.termination.map { "\($0)" } ?? "none")")
        #expect(report.reason?.hasPrefix("ended without a report: killed") == true)
        #expect(report.reason?.contains("stack overflow") == true, "the likeliest crash is named too")
        #expect(report.logTail.contains { $0.contains("about to crash: wait-to-be-killed") }, "\(report.logTail)")
        // Only that run's lines: the next start's own are not in it.
        #expect(!report.logTail.contains { $0.contains("process-pending") })
        let details = try #require(report.termination)
        #expect(details.lastSeenAlive >= (report.process.startTime ?? .distantFuture))
        #expect(details.lastSeenAlive <= details.detectedAt)
        #expect(report.textRendering.contains("Cause:"))
        // Reported once: the record is gone, and the next start's own run ended cleanly. Both runs are
        // counted as sessions: one killed, one clean.
        let layout = DiagnosticsDirectory(directory.path)
        #expect(directoryEntries(layout.runs) == ["ended"])
        let outcomes = layout.endedSessionFiles().compactMap { path in
            DurableFile.read(path).flatMap { try? JSONDecoder().decode(EndedSession.self, from: Data($0)) }?.outcome
        }
        #expect(outcomes.map(\.rawValue).sorted() == ["clean", "killed"], "\(outcomes)")
        #expect(try nextStart(directory).count == 1)
    }

    @Test("a clean exit and a crash with its own report give no termination report")
    func cleanExitAndCrash() throws {
        let directory = TemporaryDirectory()
        let exited = try runProgram(executable, [directory.path, "clean-exit", "main"])
        #expect(exited.status == 0 && !exited.signaled)
        #expect(try nextStart(directory).isEmpty)
        let crashed = try runProgram(
            executable, [directory.path, "null-write", "main"], environment: ["SWIFT_BACKTRACE": "enable=no"])
        #expect(crashed.signaled && crashed.status == SIGSEGV)
        #expect(try nextStart(directory).isEmpty)
        #expect(directoryEntries(DiagnosticsDirectory(directory.path).outbox).contains { $0.hasPrefix("crash-") })
    }

    @Test("a run that is still going is left alone until it dies")
    func liveNeighbour() throws {
        let directory = TemporaryDirectory()
        let neighbour = try startProgram(
            executable, [directory.path, "wait-to-be-killed", "main"], environment: ["SWIFT_BACKTRACE": "enable=no"])
        // A second app cannot start in a directory in use (the journal is locked), but any process
        // may look at it: the check, run from here, must see the record's process alive.
        #expect(UnseenDeaths(directory: DiagnosticsDirectory(directory.path), logFile: nil).reportAll().isEmpty)
        #expect(
            directoryEntries(DiagnosticsDirectory(directory.path).runs).filter { $0 != "ended" } == [
                "\(neighbour.processIdentifier).json"
            ])
        kill(neighbour.processIdentifier, SIGKILL)
        try neighbour.waitForExit()
        #expect(try nextStart(directory).count == 1)
    }

    @Test("an OOM-killed run is reported as killed by the OOM killer (a memory cgroup with a limit)")
    func oomKilled() throws {
        guard let cgroup = try MemoryCgroup(limitBytes: 128 << 20) else {
            print(
                "skipped: this machine does not let the test create a memory cgroup with a limit (needs root and cgroup v1 or v2 with the memory controller)"
            )
            return
        }
        defer { cgroup.remove() }
        let directory = TemporaryDirectory()
        // The child joins the cgroup before it starts Blackbox (which records the cgroup's counter).
        let result = try runProgram(
            "/bin/sh",
            ["-c", "echo $$ > \(cgroup.procsFile) && exec \(executable) \(directory.path) exhaust-memory main"],
            environment: ["SWIFT_BACKTRACE": "enable=no"])
        #expect(result.signaled && result.status == SIGKILL, "exit \(result.status): \(result.stderr.prefix(300))")
        let reports = try nextStart(directory)
        #expect(reports.count == 1)
        let report = try #require(reports.first)
        #expect(report.termination?.cause == "oom-killer", "\(report.reason ?? "")")
        #expect(report.reason?.contains("OOM killer") == true)
        let details = try #require(report.termination)
        #expect((details.cgroupOOMKillsAfter ?? 0) > (details.cgroupOOMKillsBefore ?? .max))
    }
}

/// A memory cgroup with a limit, created for one test (root only; cgroup v2 or v1's memory hierarchy).
struct MemoryCgroup {
    var path: String
    var procsFile: String { path + "/cgroup.procs" }

    init?(limitBytes: Int) throws {
        let name = "blackbox-test-\(UUID().uuidString.prefix(8))"
        let v2Root = "/sys/fs/cgroup"
        let v1Root = "/sys/fs/cgroup/memory"
        if FileManager.default.fileExists(atPath: "\(v2Root)/cgroup.controllers") {
            path = "\(v2Root)/\(name)"
            guard mkdir(path, 0o755) == 0 else { return nil }
            guard Self.write("\(limitBytes)", to: "\(path)/memory.max"), Self.write("0", to: "\(path)/memory.swap.max")
            else {
                rmdir(path)
                return nil
            }
        } else if FileManager.default.fileExists(atPath: "\(v1Root)/memory.limit_in_bytes") {
            path = "\(v1Root)/\(name)"
            guard mkdir(path, 0o755) == 0 else { return nil }
            _ = Self.write("0", to: "\(path)/memory.swappiness")
            guard Self.write("\(limitBytes)", to: "\(path)/memory.limit_in_bytes") else {
                rmdir(path)
                return nil
            }
        } else {
            return nil
        }
    }

    func remove() {
        // Empty once the child is gone; the kernel may take a moment to release it.
        for _ in 0..<50 where rmdir(path) != 0 { usleep(100_000) }
    }

    static func write(_ text: String, to file: String) -> Bool {
        (try? Data(text.utf8).write(to: URL(fileURLWithPath: file))) != nil
    }
}
