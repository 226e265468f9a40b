import BlackboxFormat
import BlackboxTestSupport
import Foundation
import Testing

@testable import Blackbox

/// `Blackbox.capture` (issue 33, item 2): error reports with the error's identity, the scope and the
/// capture site's stack, rate limited per call site and error type.
@Suite("Captured errors")
struct ErrorCaptureTests {
    @Test("an error report per call site and type, with domain, code, user info, scope and the capture site")
    func reports() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let result = try runProgram(helperExecutable("blackbox-test-child"), ["capture-errors", directory.path])
        #expect(result.status == 0 && result.stdout.contains("captured"), "\(result.stderr)")
        let names = directoryEntries("\(directory.path)/outbox").filter { $0.hasSuffix(".json") }
        let reports = try names.map { name in
            try CrashReport.decode(
                try #require(FileManager.default.contents(atPath: "\(directory.path)/outbox/\(name)")))
        }
        #expect(reports.count == 2, "three of one type at one site make one report: \(names)")
        #expect(reports.allSatisfy { $0.kind == .error })
        let diagnostic = try #require(reports.first { $0.metadata["error.type"] == "BlackboxErrors.DiagnosticError" })
        #expect(
            diagnostic.reason?.hasPrefix("paying: BlackboxErrors.DiagnosticError: ") == true,
            "\(diagnostic.reason ?? "")")
        #expect(diagnostic.metadata["error.domain"] == "shop.payments" && diagnostic.metadata["error.code"] == "402")
        #expect(diagnostic.metadata["error.userInfo.order"] == "o-17")
        #expect(diagnostic.metadata["error.userInfo.failureReason"] == "the issuer declined")
        #expect(diagnostic.scope == ["route": "/pay", "method": "POST", "request-id": "req-5"])
        let top = diagnostic.frames.first?.symbols.last
        #expect(
            top?.file?.hasSuffix("blackbox-test-child/main.swift") == true,
            "the capture site first, not Blackbox's own frames: \(String(describing: top))")
        let other = try #require(reports.first { $0.metadata["error.type"]?.hasSuffix("QuotaExceeded") == true })
        #expect(other.reason?.contains("QuotaExceeded(tenant: \"t1\")") == true, "\(other.reason ?? "")")
        // This child logs through swift-log's default handler (it bootstraps nothing): stderr.
        let logged = result.stderr.split(separator: "\n").filter { $0.contains("captured error: paying:") }
        #expect(logged.count == 4, "every capture is logged, reported or not: \(result.stderr)")
    }

    /// Issue 52, item 5: swift-log 1.16's `error:` on a call at `.error` or above is a captured error:
    /// its type, the log call's message and site, the stack at the call, rate-limited per site; a
    /// warning's error is not captured, nor any with `capturesLoggedErrors` off.
    /// `scoped`: the site's calls after the first run in a request's scope (a server's handlers); they
    /// share the site's budget with the first and are counted by the writer the same way.
    @Test("a log call's error at .error or above is captured once per site; a warning's is not")
    func loggedErrors() throws {
        for (captures, scoped) in [(true, false), (false, false), (true, true)] {
            let directory = TemporaryDirectory()
            defer { directory.remove() }
            let result = try runProgram(
                helperExecutable("blackbox-test-child"),
                ["logged-errors", directory.path] + (captures ? (scoped ? ["scoped"] : []) : ["off"]))
            #expect(result.status == 0 && result.stdout.contains("logged"), "\(result.stderr)")
            // After shutdown a line is written on the caller's thread, its error described there.
            #expect(
                result.stderr.contains(#"the carrier answered late error="CarrierTimeout(carrier: \"late\")""#),
                "\(result.stderr)")
            let outbox = "\(directory.path)/outbox"
            let reports = try directoryEntries(outbox).filter { $0.hasSuffix(".json") }.map { name in
                try CrashReport.decode(try #require(FileManager.default.contents(atPath: "\(outbox)/\(name)")))
            }
            guard captures else {
                #expect(reports.isEmpty, "capturesLoggedErrors off: \(reports.map(\.reason))")
                continue
            }
            #expect(
                reports.count == 4,
                "at one site: the first error, the first of another type, the one after the interval; the critical one: \(reports.map(\.reason))"
            )
            #expect(reports.allSatisfy { $0.kind == .error })
            #expect(reports.filter { $0.metadata["error.type"]?.hasSuffix("ParcelLost") == true }.count == 1)
            let repeated = try #require(
                reports.first { $0.reason?.contains("\"dhl\"") == true }, "\(reports.map(\.reason))")
            #expect(repeated.notes.allSatisfy { !$0.contains("more failures") }, "\(repeated.notes)")
            // The two errors of the type in between were counted by the writer thread.
            let again = try #require(reports.first { $0.reason?.contains("dhl-again") == true })
            #expect(again.notes.contains("2 more failures at this call site since the last report"), "\(again.notes)")
            if scoped {
                #expect(again.scope?["route"] == "/ship", "\(again.scope ?? [:])")
                #expect(again.metadata["error.site.from"] == "logged", "the call names its site: \(again.metadata)")
            }
            #expect(repeated.reason?.hasPrefix("the carrier did not answer: ") == true, "\(repeated.reason ?? "")")
            let line = result.stdout.split(separator: "\n").first { $0.hasPrefix("site error ") }?.split(separator: " ")
                .last
            #expect(
                repeated.metadata["location"] == "blackbox_test_child/main.swift:\(line ?? "?")", "\(repeated.metadata)"
            )
            let top = repeated.frames.first?.symbols.last
            #expect(
                top?.file?.hasSuffix("blackbox-test-child/main.swift") == true,
                "the log call's stack: \(String(describing: top))")
            #expect(!reports.contains { $0.reason?.contains("gls") == true }, "a warning's error is not captured")
            // The log call's line is the only line: no second "captured error" line.
            let log = try String(contentsOfFile: "\(directory.path)/logs/child.log", encoding: .utf8)
            #expect(!log.contains("captured error"), "\(log)")
        }
    }

    /// Issue 49, item 3: a framework integration captures a handler's error in its middleware, whose
    /// stack has none of the app's frames. The report carries where the error was thrown when the
    /// error says (a `DiagnosticError`), the app marked it (`Blackbox.thrown`) or logged it
    /// (swift-log's `error:`); one error type thrown by two routes is two reports, not one rate-limited.
    @Test("a captured error's report names its throw site: the error's own, a marked throw, a log call")
    func throwSites() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let result = try runProgram(helperExecutable("blackbox-test-child"), ["throw-sites", directory.path])
        #expect(result.status == 0, "\(result.stderr)")
        var lines: [String: String] = [:]
        for line in result.stdout.split(separator: "\n") where line.hasPrefix("site ") {
            let words = line.split(separator: " ")
            if words.count == 3 { lines[String(words[1])] = String(words[2]) }
        }
        #expect(lines.count == 4, "\(result.stdout)")
        let outbox = "\(directory.path)/outbox"
        let reports = try directoryEntries(outbox).filter { $0.hasSuffix(".json") }.map { name in
            try CrashReport.decode(try #require(FileManager.default.contents(atPath: "\(outbox)/\(name)")))
        }
        func report(_ route: String) -> CrashReport? { reports.first { $0.scope?["route"] == route } }
        #expect(reports.count == 5, "one per request: \(reports.map { $0.scope ?? [:] })")
        for (route, name, origin) in [
            ("/pay", "diagnostic", "error"), ("/cart", "thrown-cart", "thrown"), ("/order", "thrown-order", "thrown"),
            ("/ship", "logged", "logged"),
        ] {
            let metadata = try #require(report(route), "no report for \(route)").metadata
            #expect(metadata["error.site.file"] == "blackbox_test_child/main.swift", "\(route): \(metadata)")
            #expect(metadata["error.site.line"] == lines[name], "\(route): \(metadata)")
            #expect(metadata["error.site.from"] == origin, "\(route): \(metadata)")
            #expect(metadata["error.site.function"]?.isEmpty == false, "\(route): \(metadata)")
        }
        // The handler logged the error and threw it on: one report, the log call's (issue 52).
        #expect(report("/ship")?.reason?.hasPrefix("the carrier did not answer: ") == true)
        let unmarked = try #require(report("/refund"))
        #expect(unmarked.metadata["error.site.file"] == nil, "no site is made up: \(unmarked.metadata)")
    }

    /// Issue 49, item 2: a release server's first captured error held its request 11-23 s, naming the
    /// stack in-process on the request's own thread (6.36 s of CPU). The capture now takes the
    /// addresses only; the report is named on a thread of its own and is in the outbox, named, after
    /// shutdown. Thread CPU, not wall time: a loaded machine cannot fail it, naming inline would.
    @Test("the first capture in a process costs its caller milliseconds; the report is named after")
    func firstCaptureIsCheap() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let result = try runProgram(helperExecutable("blackbox-test-child"), ["first-capture-cost", directory.path])
        #expect(result.status == 0, "\(result.stderr)")
        let figures = result.stdout.split(separator: "\n").first { $0.hasPrefix("capture wall") }?
            .split(separator: " ").compactMap { Double($0) }
        let (wall, cpu) = try #require(figures.flatMap { $0.count == 2 ? ($0[0], $0[1]) : nil }, "\(result.stdout)")
        #expect(cpu < 0.25, "the capture's thread CPU: \(cpu) s (wall \(wall) s)")
        let names = directoryEntries("\(directory.path)/outbox")
        #expect(!names.contains { $0.contains(".unnamed-") }, "nothing left unnamed after shutdown: \(names)")
        let json = try #require(names.first { $0.hasSuffix(".json") }, "\(names)")
        let report = try CrashReport.decode(
            try #require(FileManager.default.contents(atPath: "\(directory.path)/outbox/\(json)")))
        #expect(report.symbolicated, "\(report.notes)")
        let top = report.frames.first?.symbols.last
        #expect(top?.file?.hasSuffix("blackbox-test-child/main.swift") == true, "\(String(describing: top))")
    }

    @Test("a report a process could not name before it died is named and published by the next start")
    func leftoverIsPublished() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        // A report as a killed process leaves it: frames unnamed, under a pid that no longer runs.
        var report = CrashReport(
            kind: .error, app: .init(name: "child"),
            host: .init(name: "h", os: "linux", kernel: "6", architecture: "x86_64"),
            process: .init(pid: 1, path: "/app", startTime: nil, crashTime: Date()), thread: .init(id: 1, name: nil))
        report.frames = [CrashReport.Frame(index: 0, address: "0x1000")]
        let outbox = DiagnosticsDirectory(directory.path).outbox
        try FileManager.default.createDirectory(atPath: outbox, withIntermediateDirectories: true)
        let dead = try deadPID()
        let leftover = "\(outbox)/error-\(report.id.uuidString.lowercased()).json.unnamed-\(dead)"
        try CrashReport.makeEncoder().encode(report).write(to: URL(fileURLWithPath: leftover))
        let living = "\(outbox)/error-\(UUID().uuidString.lowercased()).json.unnamed-\(getppid())"
        try CrashReport.makeEncoder().encode(report).write(to: URL(fileURLWithPath: living))

        ReportNaming.publishLeftovers(
            in: DiagnosticsDirectory(directory.path), builder: CrashReportBuilder(symbolicator: nil))

        let names = directoryEntries(outbox)
        #expect(!names.contains { $0.hasSuffix("unnamed-\(dead)") }, "\(names)")
        #expect(names.contains { $0.hasSuffix("unnamed-\(getppid())") }, "a living process's own stays: \(names)")
        let published = try CrashReport.decode(
            try #require(
                FileManager.default.contents(atPath: "\(outbox)/error-\(report.id.uuidString.lowercased()).json")))
        #expect(published.notes.contains { $0.contains("ended first") }, "\(published.notes)")
        #expect(published.frames.first?.address == "0x1000")
    }

    /// A pid no process has: one of a child that has ended and been reaped.
    private func deadPID() throws -> Int32 {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/true")
        try process.run()
        try process.waitForExit()
        return process.processIdentifier
    }
}
