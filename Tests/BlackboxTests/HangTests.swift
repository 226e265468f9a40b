import BlackboxFormat
import BlackboxTestSupport
import Foundation
import Testing

@testable import Blackbox

/// The opt-in hang watchdog (issue 19, item 3): a watched main loop or queue blocked for 3 s at a
/// 1 s deadline (the crash child's `hang-main`, `hang-queue`), or never (`healthy`).
@Suite("Hangs", .serialized)
struct HangTests {
    var executable: String { "\(Build.debug.binDirectory ?? "")/blackbox-crash-child" }

    func run(_ kind: String) throws -> (reports: [CrashReport], log: String) {
        let directory = TemporaryDirectory()
        let result = try runProgram(executable, [directory.path, kind, "main"])
        #expect(result.status == 0 && !result.signaled, "\(kind): the process goes on and exits 0: \(result.stderr)")
        let layout = DiagnosticsDirectory(directory.path)
        let reports = try directoryEntries(layout.outbox).filter { $0.hasPrefix("hang-") && $0.hasSuffix(".json") }
            .map { try CrashReport.decode(Data(contentsOf: URL(fileURLWithPath: "\(layout.outbox)/\($0)"))) }
        let log = directoryEntries(layout.logs).filter { $0.hasSuffix(".log") }.compactMap {
            try? String(contentsOfFile: "\(layout.logs)/\($0)", encoding: .utf8)
        }.joined()
        return (reports, log)
    }

    func check(_ report: CrashReport, blockedIn function: String) throws {
        #expect(report.kind == .hang && report.signal == nil)
        let threads = try #require(report.threads)
        let first = try #require(threads.first)
        #expect(first.crashed && first.id == report.thread.id && first.frames == report.frames)
        #expect(
            first.frames.contains { $0.symbols.contains { $0.function.contains(function) } },
            "\(first.frames.prefix(6).map { $0.symbols.first?.function ?? $0.address })")
        #expect(threads.count >= 3, "every thread: \(threads.map(\.name))")
        #expect(report.logTail.contains { $0.contains("about to crash: ") && $0.contains("hang") })
        #expect(report.textRendering.contains("Unresponsive"))
    }

    @Test("a main loop blocked for 3 s at a 1 s deadline: one hang report, a warning, the duration when it recovers")
    func mainLoop() throws {
        let (reports, log) = try run("hang-main")
        #expect(reports.count == 1)
        let report = try #require(reports.first)
        try check(report, blockedIn: "blockTheMainThread")
        #expect(report.thread.id == report.process.pid, "the main thread is the unresponsive one")
        #expect(report.reason?.hasPrefix("main loop did not respond for") == true)
        #expect(log.contains("WARN  blackbox.hangs: hang: main loop has not responded"), "\(log)")
        #expect(log.contains("hang over: main loop was unresponsive for"), "\(log)")
    }

    @Test("64 concurrent scoped requests, one blocking its pool thread: the hang report names that request")
    func hangNamesItsOwnRequest() throws {
        for _ in 0..<3 {
            let (reports, _) = try run("scoped-hang")
            #expect(reports.count == 1)
            let report = try #require(reports.first)
            try check(report, blockedIn: "blockTheCurrentThread")
            let scope = try #require(report.scope, "\(report.notes)")
            #expect(scope["request-id"] == "req-37" && scope["user-id"] == "user-37", "\(scope)")
            #expect(scope["trace-id"] == "trace-37" && scope["route"] == "/items/:id")
            // Every other thread that was serving a request names its own.
            let others = (report.threads ?? []).dropFirst().compactMap { $0.scope?["request-id"] }
            #expect(!others.contains("req-37"), "\(others)")
            #expect(report.textRendering.contains("  request-id: req-37"))
        }
    }

    /// How the runs recorded in `directory` ended (release health), sorted.
    func sessionOutcomes(_ directory: TemporaryDirectory) -> [String] {
        DiagnosticsDirectory(directory.path).endedSessionFiles().compactMap { path in
            DurableFile.read(path).flatMap { try? JSONDecoder().decode(EndedSession.self, from: Data($0)) }?
                .outcome.rawValue
        }.sorted()
    }

    @Test("a run killed while hung counts as a hung session; one that recovered and exited, as clean")
    func hungSessions() throws {
        let recovered = TemporaryDirectory()
        defer { recovered.remove() }
        #expect(try runProgram(executable, [recovered.path, "hang-main", "main"]).status == 0)
        #expect(sessionOutcomes(recovered) == ["clean"])

        let killed = TemporaryDirectory()
        defer { killed.remove() }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = [killed.path, "hang-main", "main"]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        let outbox = DiagnosticsDirectory(killed.path).outbox
        let deadline = Date().addingTimeInterval(20)
        while !directoryEntries(outbox).contains(where: { $0.hasPrefix("hang-") && $0.hasSuffix(".json") })
            && Date() < deadline
        {
            usleep(20_000)
        }
        kill(process.processIdentifier, SIGKILL)
        #expect(try process.waitForOutcome().signal == SIGKILL, "killed while still hung")
        #expect(try runProgram(executable, [killed.path, "clean-exit", "main"]).status == 0)
        #expect(sessionOutcomes(killed) == ["clean", "hung"])
    }

    @Test("a serial queue blocked for 3 s: one hang report naming the worker thread that blocks it")
    func queue() throws {
        let (reports, log) = try run("hang-queue")
        #expect(reports.count == 1)
        let report = try #require(reports.first)
        try check(report, blockedIn: "blockTheQueue")
        #expect(log.contains("hang over: bbx-queue was unresponsive for"), "\(log)")
    }

    @Test("a healthy run writes no hang report")
    func healthy() throws {
        let (reports, log) = try run("healthy")
        #expect(reports.isEmpty)
        #expect(!log.contains("blackbox.hangs"))
    }
}

@Suite("Hang watching belongs to a runtime")
struct HangRuntimeTests {
    @Test("each runtime's watchdog reports into its own directory, and its shutdown ends the thread")
    func perRuntime() throws {
        let directory = TemporaryDirectory()
        let result = try runProgram(helperExecutable("blackbox-test-child"), ["hangs-per-runtime", directory.path])
        #expect(result.status == 0, "\(result.stderr)")
        let reports = result.stdout.split(separator: "\n").filter { $0.hasPrefix("report ") }
        #expect(reports.count == 2, "one hang per runtime: \(result.stdout)")
        #expect(reports.first?.contains("\(directory.path)/a/outbox/hang-") == true, "\(reports)")
        #expect(reports.last?.contains("\(directory.path)/b/outbox/hang-") == true, "\(reports)")
        #expect(result.stdout.contains("watchdog threads after shutdown a: 0"), "\(result.stdout)")
        #expect(result.stdout.contains("watchdog threads after shutdown b: 0"), "\(result.stdout)")
        let second = try CrashReport.decode(
            try #require(FileManager.default.contents(atPath: String(reports.last!.dropFirst("report ".count)))))
        #expect(second.reason?.hasPrefix("loop b did not respond") == true, "\(second.reason ?? "")")
    }
}
