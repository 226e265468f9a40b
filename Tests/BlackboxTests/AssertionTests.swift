import BlackboxFormat
import BlackboxTestSupport
import Foundation
import Testing

@testable import Blackbox

@Suite("Assertions in child processes")
struct AssertionChildTests {
    @Test(
        "release: ensure logs once, writes one non-fatal report with a symbolicated backtrace, returns false, goes on",
        .enabled(if: Build.release.binDirectory != nil))
    func releaseEnsure() throws {
        let directory = TemporaryDirectory()
        let executable = "\(Build.release.binDirectory!)/blackbox-crash-child"
        let result = try runProgram(executable, [directory.path, "ensure", "main"])
        #expect(!result.signaled && result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("continued after 5 failed ensures"))

        let lines = logLines(directory, base: "crash-child").filter { $0.contains("CRIT") }
        #expect(lines.count == 1, "rate limited to one line per call site: \(lines)")
        #expect(lines.first?.contains("ensure failed: the attempt count must be negative") == true)
        #expect(lines.first?.contains("Triggers.swift") == true, "file and line")

        let reports = directoryEntries("\(directory.path)/outbox").filter { $0.hasSuffix(".json") }
        #expect(reports.count == 1 && reports.first?.hasPrefix("nonfatal-") == true, "\(reports)")
        let data = try #require(FileManager.default.contents(atPath: "\(directory.path)/outbox/\(reports[0])"))
        let report = try CrashReport.decode(data)
        #expect(report.kind == .nonfatal && report.signal == nil)
        #expect(report.reason?.contains("the attempt count must be negative") == true)
        #expect(report.symbolicated && report.frameSource == "runtime")
        let top = try #require(report.frames.first?.symbols.last)
        #expect(top.function.contains("failEnsureRepeatedly"), "\(report.frames.prefix(3))")
        #expect(top.file?.hasSuffix("Triggers.swift") == true && top.line != nil)
        #expect(report.metadata["assertion"] == "ensure")
        #expect(report.logTail.contains { $0.contains("about to crash: ensure") })
        #expect(report.images.contains { $0.path == executable && $0.buildID == (try? readelfBuildID(executable)) })
    }

    @Test("debug: ensure traps; the critical line is in the log file before the process dies")
    func debugEnsureTraps() throws {
        let directory = TemporaryDirectory()
        let (result, report, _) = try crashAndProcess("ensure", on: "main", build: .debug, directory: directory)
        #expect(result.signaled && result.status == SIGILL)
        let lines = logLines(directory, base: "crash-child")
        #expect(
            lines.contains { $0.contains("CRIT") && $0.contains("ensure failed: the attempt count must be negative") })
        let crash = try #require(report)
        #expect(crash.fatalMessage?.contains("ensure failed: the attempt count must be negative") == true)
    }

    @Test(
        "release: unreachable traps in every build, with its message in the crash report",
        .enabled(if: Build.release.binDirectory != nil))
    func unreachableTraps() throws {
        let directory = TemporaryDirectory()
        let (result, report, _) = try crashAndProcess("unreachable", on: "main", build: .release, directory: directory)
        #expect(result.signaled && result.status == SIGILL)
        let crash = try #require(report)
        #expect(crash.fatalMessage?.contains("unreachable failed: negative argument count") == true)
        #expect(crash.reason?.contains("unreachable failed") == true)
        #expect(logLines(directory, base: "crash-child").contains { $0.contains("CRIT") && $0.contains("unreachable") })
    }
}

@Suite("Assertions with a core built without Blackbox.start")
struct AssertionOwnCoreTests {
    @Test("a failed ensure writes its non-fatal report through the app's own running core, at its level")
    func nonFatalReportThroughOwnCore() throws {
        let directory = TemporaryDirectory()
        let result = try runProgram(helperExecutable("blackbox-test-child"), ["own-core-ensure", directory.path])
        #expect(result.status == 0 && result.stdout.contains("went on"), "\(result.stderr)")
        let reports = directoryEntries("\(directory.path)/outbox").filter { $0.hasSuffix(".json") }
        #expect(reports.count == 1 && reports.first?.hasPrefix("nonfatal-") == true, "\(reports)")
        let data = try #require(FileManager.default.contents(atPath: "\(directory.path)/outbox/\(reports[0])"))
        let report = try CrashReport.decode(data)
        #expect(report.reason?.contains("arithmetic changed") == true)
        #expect(report.logTail.contains { $0.contains("before the failed ensure") }, "\(report.logTail)")
        #expect(report.scope == ["route": "/sum", "request-id": "req-9"], "the failing code's scope")
        #expect(report.metadata["level"] == "warning", "the ensure's level")
        // This child logs through swift-log's default handler: the line is at the ensure's level.
        #expect(result.stderr.contains("warning blackbox.assertions"), "\(result.stderr)")
    }
}

@Suite("Assertion policy", .serialized)
struct AssertionPolicyTests {
    @Test("with traps off, ensure returns its condition and bug returns; call sites are rate limited")
    func neverTrap() {
        let previous = Assertions.policy
        Assertions.policy = .neverTrap
        defer { Assertions.policy = previous }
        #expect(ensure(1 + 1 == 2, "arithmetic"))
        var safePath = false
        if !ensure([Int]().first != nil, "empty") { safePath = true }
        #expect(safePath)
        bug("went on after bug()")

        let limiter = CallSiteLimiter()
        let site = CallSiteKey(file: "A.swift", line: 1)
        #expect(limiter.shouldReport(site) == (true, 0))
        #expect(limiter.shouldReport(site) == (false, 1))
        #expect(limiter.shouldReport(site) == (false, 2))
        #expect(
            limiter.shouldReport(CallSiteKey(file: "B.swift", line: 9)) == (true, 0), "another site has its own budget")
        #expect(limiter.shouldReport(CallSiteKey(file: "A.swift", line: 2)) == (true, 0), "another line too")
        // A captured error's site is also its type and where it was thrown.
        var typed = site
        typed.errorType = ObjectIdentifier(Int.self)
        #expect(limiter.shouldReport(typed) == (true, 0), "another error type at the same line")
        #expect(limiter.shouldReport(typed) == (false, 1))
        typed.throwSite = ThrowSite(fileID: "C.swift", line: 3, function: "f()")
        #expect(limiter.shouldReport(typed) == (true, 0), "the same type thrown elsewhere")
    }

    @Test("the policy decides whether to trap")
    func policies() {
        #expect(AssertionPolicy.alwaysTrap.trapsNow)
        #expect(!AssertionPolicy.neverTrap.trapsNow)
        #if DEBUG
            #expect(AssertionPolicy.trapInDebugOnly.trapsNow)
        #else
            #expect(!AssertionPolicy.trapInDebugOnly.trapsNow)
        #endif
    }
}
