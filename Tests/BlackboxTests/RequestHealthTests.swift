import BlackboxFormat
import BlackboxTestSupport
import Foundation
import Testing

@testable import Blackbox

/// Request health (`Blackbox.handleRequest` → `RequestTally` → the run's ended session): every request
/// counted, the server errors among them, and those a crash cut short, as the next start tells them.
@Suite("Request health: every request counted, and those a crash cut short")
struct RequestHealthTests {
    @Test("a tally counts started, ended and failed requests; an unclean end counts those in flight as cut short")
    func tally() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let layout = DiagnosticsDirectory(directory.path)
        try FileManager.default.createDirectory(atPath: layout.runs, withIntermediateDirectories: true)
        // A tally of its own: `RequestTally.shared` belongs to whichever runtime the test process started last.
        let tally = RequestTally()
        tally.requestStarted()
        #expect(RequestTally.counts(pid: 4242, in: layout, cutShort: true) == nil, "nothing before the run began")
        tally.begin(pid: 4242, in: layout)
        #expect(
            !FileManager.default.fileExists(atPath: RequestTally.path(pid: 4242, in: layout)),
            "made at the first request")
        for index in 0..<5 {
            tally.requestStarted()
            if index < 4 { tally.requestEnded(serverError: index == 0) }
        }
        #expect(
            RequestTally.counts(pid: 4242, in: layout, cutShort: true)
                == RequestCounts(total: 5, serverErrors: 1, crashed: 1))
        #expect(RequestTally.counts(pid: 4242, in: layout, cutShort: false) == RequestCounts(total: 5, serverErrors: 1))
        tally.end()
        tally.requestStarted()
        #expect(RequestTally.counts(pid: 4242, in: layout, cutShort: false)?.total == 5, "nothing after the run ended")
        let attributes = try FileManager.default.attributesOfItem(atPath: RequestTally.path(pid: 4242, in: layout))
        #expect((attributes[.posixPermissions] as? Int) == 0o600)
        RequestTally.remove(pid: 4242, in: layout)
        #expect(RequestTally.counts(pid: 4242, in: layout, cutShort: true) == nil)

        // A server's counts sent while it runs: what ended since the last part, then the rest at its end.
        let live = RequestTally()
        live.begin(pid: 4444, in: layout)
        #expect(live.unreported(in: layout.root, every: .zero) == nil, "nothing counted yet")
        for index in 0..<10 {
            live.requestStarted()
            live.requestEnded(serverError: index % 5 == 0)
        }
        live.requestStarted()  // in flight
        #expect(live.unreported(in: "/elsewhere", every: .zero) == nil, "another directory's uploader")
        #expect(live.unreported(in: layout.root, every: .seconds(3600)) == nil, "not due yet")
        let first = try #require(live.unreported(in: layout.root, every: .zero))
        #expect(first.counts == RequestCounts(total: 10, serverErrors: 2))
        live.markReported(first)
        #expect(live.unreported(in: layout.root, every: .zero) == nil, "nothing ended since")
        live.requestEnded(serverError: true)
        let second = try #require(live.unreported(in: layout.root, every: .zero))
        #expect(second.counts == RequestCounts(total: 1, serverErrors: 1))
        #expect(second.sinceNanoseconds >= first.sinceNanoseconds, "counted from when the first part was taken")
        // Not marked (the bundle never became durable): the run's end counts it, and nothing sent before.
        live.requestStarted()
        #expect(
            RequestTally.counts(pid: 4444, in: layout, cutShort: true)
                == RequestCounts(total: 2, serverErrors: 1, crashed: 1))
        live.end()
        #expect(live.unreported(in: layout.root, every: .zero) == nil, "the run ended")

        // A file that is not a tally's: too short, or counters past anything a run can count.
        let path = RequestTally.path(pid: 4343, in: layout)
        try Data([1, 2, 3]).write(to: URL(fileURLWithPath: path))
        #expect(RequestTally.counts(pid: 4343, in: layout, cutShort: true) == nil)
        try Data(repeating: 0xFF, count: 24).write(to: URL(fileURLWithPath: path))
        let bounded = try #require(RequestTally.counts(pid: 4343, in: layout, cutShort: true))
        #expect(bounded.total == 1 << 40 && bounded.serverErrors == 1 << 40 && bounded.crashed == 0)
    }

    @Test(
        "a crash with 15 requests in flight: the next start counts 200 requests, 30 server errors and 15 cut short",
        arguments: CrashMatrixTests.debugAndRelease)
    func crashedRun(build: Build) throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let executable = "\(try #require(build.binDirectory))/blackbox-crash-child"
        let environment = ["SWIFT_BACKTRACE": "enable=no"]
        let crashed = try runProgram(
            executable, [directory.path, "counted-requests", "main"], environment: environment)
        #expect(crashed.signaled && crashed.status == SIGSEGV, "\(crashed.stderr.suffix(500))")
        let next = try runProgram(executable, [directory.path, "clean-exit", "main"], environment: environment)
        #expect(next.status == 0, "\(next.stderr.suffix(500))")

        let layout = DiagnosticsDirectory(directory.path)
        let sessions = EndedSession.pending(in: layout).sessions
        let crashedRun = try #require(sessions.first { $0.outcome == .crashed }, "\(sessions)")
        #expect(crashedRun.requests == RequestCounts(total: 200, serverErrors: 30, crashed: 15))
        #expect(sessions.first { $0.outcome == .clean }?.requests == nil, "the clean run served no request")
        #expect(SessionSummary.summarize(sessions).first?.requests == crashedRun.requests)
        #expect(directoryEntries(layout.runs).filter { $0.hasSuffix(".requests") }.isEmpty, "counted once, then gone")
    }
}
