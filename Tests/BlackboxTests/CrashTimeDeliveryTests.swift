import BlackboxFormat
import BlackboxTestSupport
import Foundation
import Testing

@testable import Blackbox

/// The handler's half of crash-time delivery (issue 19, item 5), with stand-in helpers: what the
/// helper is given, and that a helper which fails or hangs never costs the report or more than the
/// deadline. The real helper and collector: the collector package's CrashTimeDeliveryTests.
@Suite("Crash-time delivery: the handler and its helper")
struct CrashTimeDeliveryTests {
    /// A shell script standing in for `blackbox deliver-crash`.
    static func helper(_ body: String, in directory: TemporaryDirectory) throws -> String {
        let path = "\(directory.path)/helper.sh"
        try Data("#!/bin/sh\n\(body)\n".utf8).write(to: URL(fileURLWithPath: path))
        chmod(path, 0o755)
        return path
    }

    static func crash(
        _ directory: TemporaryDirectory, helper: String, deadlineMilliseconds: Int = 10_000
    ) throws -> (ChildResult, Duration) {
        let started = ContinuousClock.now
        let result = try runChild(
            "blackbox-crash-child", ["\(directory.path)/diagnostics", "null-write", "main"],
            environment: [
                "SWIFT_BACKTRACE": "enable=no", "CRASH_CHILD_DELIVERY_HELPER": helper,
                "CRASH_CHILD_DELIVERY_SERVER": "http://collector.invalid", "CRASH_CHILD_DELIVERY_KEY": "secret-key",
                "CRASH_CHILD_DELIVERY_DEADLINE_MS": String(deadlineMilliseconds),
            ])
        return (result, ContinuousClock.now - started)
    }

    static func pendingReports(_ directory: TemporaryDirectory) -> [String] {
        let pending = DiagnosticsDirectory("\(directory.path)/diagnostics").pendingCrashes
        let names = (try? FileManager.default.contentsOfDirectory(atPath: pending)) ?? []
        return names.filter { $0.hasSuffix(".raw") }.map { "\(pending)/\($0)" }
    }

    static func text(_ path: String) -> String {
        String(decoding: (try? Data(contentsOf: URL(fileURLWithPath: path))) ?? Data(), as: UTF8.self)
    }

    @Test("the helper gets the complete report's path last, the key only in its environment, and no app descriptors")
    func helperInputs() throws {
        let directory = TemporaryDirectory()
        let seen = "\(directory.path)/seen"
        let helper = try Self.helper(
            """
            for argument in "$@"; do echo "arg $argument"; done > \(seen).args
            env > \(seen).env
            for fd in /proc/$$/fd/*; do echo "${fd##*/} $(readlink $fd)"; done > \(seen).fds
            for last; do :; done
            cp "$last" \(seen).raw
            exit 0
            """, in: directory)
        let (result, _) = try Self.crash(directory, helper: helper)
        #expect(result.signaled && result.status == SIGSEGV, "\(result.stderr)")
        let arguments = Self.text("\(seen).args").split(separator: "\n").map { String($0.dropFirst(4)) }
        #expect(Array(arguments.prefix(2)) == ["deliver-crash", "--deadline"], "\(arguments)")
        let reportPath = try #require(arguments.last)
        #expect(reportPath.hasPrefix(DiagnosticsDirectory("\(directory.path)/diagnostics").pendingCrashes + "/crash-"))
        #expect(!arguments.contains { $0.contains("secret-key") })
        let environment = Self.text("\(seen).env")
        #expect(environment.contains("BLACKBOX_KEY=secret-key\n") && environment.contains("BLACKBOX_SERVER=http://"))
        // The crash child holds `diagnostics-app-descriptor` open without close-on-exec.
        let descriptors = Self.text("\(seen).fds").split(separator: "\n")
        #expect(descriptors.contains { $0.hasPrefix("0 ") } && descriptors.contains { $0.hasPrefix("2 ") })
        #expect(!descriptors.contains { $0.hasSuffix("app-descriptor") }, "the helper inherited: \(descriptors)")
        // It ran after the report was complete, and before anything else was added to it.
        let copy = Self.text("\(seen).raw")
        #expect(copy.hasSuffix("\nend\n"), "\(copy.suffix(100))")
        // Exit 0 means delivered: the handler adds nothing (deleting is the helper's job; this one did not).
        #expect(Self.pendingReports(directory).map { Self.text($0) } == [copy])
    }

    @Test("a failing helper: the report stays, says why, and the next launch notes it")
    func failingHelper() throws {
        let directory = TemporaryDirectory()
        let (result, _) = try Self.crash(directory, helper: try Self.helper("exit 3", in: directory))
        #expect(result.signaled && result.status == SIGSEGV)
        let reports = Self.pendingReports(directory)
        #expect(reports.count == 1)
        #expect(Self.text(reports.first ?? "").hasSuffix("\nend\ndelivery exit-status 3\n"))
        let outcome = CrashReportProcessor(directory: "\(directory.path)/diagnostics").processPending()
        let report = try #require(outcome.processed.first?.report)
        #expect(
            report.notes.contains(
                "crash-time delivery did not complete (exit-status 3); sent from the next launch instead"))
        #expect(report.symbolicated && !report.partial, "\(report.notes)")
    }

    @Test("a helper that hangs is killed at the deadline; the process then dies by its signal")
    func hangingHelper() throws {
        let directory = TemporaryDirectory()
        let pidFile = "\(directory.path)/helper.pid"
        let helper = try Self.helper("echo $$ > \(pidFile)\nexec sleep 60", in: directory)
        let (result, elapsed) = try Self.crash(directory, helper: helper, deadlineMilliseconds: 1_000)
        #expect(result.signaled && result.status == SIGSEGV)
        #expect(elapsed >= .seconds(1), "it did not wait for the helper: \(elapsed)")
        #expect(elapsed < .seconds(10), "the deadline did not hold: \(elapsed)")
        let reports = Self.pendingReports(directory)
        #expect(Self.text(reports.first ?? "").hasSuffix("\ndelivery timed-out\n"))
        let helperPID = try #require(Int32(Self.text(pidFile).trimmingCharacters(in: .whitespacesAndNewlines)))
        #expect(kill(helperPID, 0) != 0 && errno == ESRCH, "the helper \(helperPID) outlived its deadline")
    }

    @Test("a helper that cannot run turns delivery off, says so at start, and crash capture still works")
    func missingHelper() throws {
        let directory = TemporaryDirectory()
        let (result, _) = try Self.crash(directory, helper: "\(directory.path)/no-such-helper")
        #expect(result.signaled && result.status == SIGSEGV)
        #expect(result.stderr.contains("crash-time delivery is off"), "\(result.stderr)")
        let reports = Self.pendingReports(directory)
        #expect(reports.count == 1 && Self.text(reports.first ?? "").hasSuffix("\nend\n"))
    }
}
