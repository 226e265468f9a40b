import BlackboxFormat
import Foundation
import Testing

@testable import Blackbox

/// The `blackbox` command, run as a process.
@Suite("blackbox CLI")
struct CLITests {
    var cli: String { helperExecutable("blackbox") }

    @Test("show: a raw report is symbolicated into a crash log; a processed one prints as text or JSON")
    func show() throws {
        let directory = TemporaryDirectory()
        let crasher = "\(Build.debug.binDirectory ?? "")/blackbox-crash-child"
        _ = try runProgram(
            crasher, [directory.path, "null-write", "main"], environment: ["SWIFT_BACKTRACE": "enable=no"])
        let pending = "\(directory.path)/crashes/pending"
        let raw = "\(pending)/\(try #require(directoryEntries(pending).first))"
        let text = try runProgram(cli, ["show", raw])
        #expect(text.status == 0 && !text.signaled, "\(text.stderr)")
        #expect(text.stdout.contains("Exception:        SIGSEGV (11), code 1 (SEGV_MAPERR)"))
        #expect(text.stdout.contains("bbx_test_null_write"))

        let processed = try #require(CrashReportProcessor(directory: directory.path).processPending().processed.first)
        let json = try runProgram(cli, ["show", "--json", processed.path])
        #expect(json.status == 0)
        #expect(try CrashReport.decode(Data(json.stdout.utf8)) == processed.report)
    }

    @Test("show: a file that is not a report, or is missing, is one clear line and status 1")
    func showBadInput() throws {
        let directory = TemporaryDirectory()
        let bogus = "\(directory.path)/bogus.json"
        try "{\"hello\": 1}".write(toFile: bogus, atomically: true, encoding: .utf8)
        for (path, message) in [
            (bogus, "not a Blackbox crash report"), ("\(directory.path)/missing.json", "no such file"),
        ] {
            let result = try runProgram(cli, ["show", path])
            #expect(result.status == 1 && !result.signaled)
            #expect(result.stderr.hasPrefix("blackbox: \(path): \(message)"), "\(result.stderr)")
            #expect(!result.stderr.contains("Fatal error") && result.stderr.split(separator: "\n").count == 1)
        }
    }

    @Test("logs: archives (gzip too) before the active file, filtered by level and label")
    func logs() throws {
        let directory = TemporaryDirectory()
        let logs = "\(directory.path)/logs"
        try FileManager.default.createDirectory(atPath: logs, withIntermediateDirectories: true)
        let archived = """
            2026-11-20T10:00:00.000Z INFO  net: first archived (a.swift:1)
            2026-11-20T10:00:01.000Z ERROR db: archived error (a.swift:2)

            """
        let plain = "\(logs)/app.20261120T100000.000Z--20261120T100001.000Z.log"
        try archived.write(toFile: plain, atomically: true, encoding: .utf8)
        try Gzip.compress(plain, to: plain + ".gz")
        try FileManager.default.removeItem(atPath: plain)
        let active = """
            2026-11-21T10:00:00.000Z DEBUG net.http: noisy (b.swift:1)
            2026-11-21T10:00:01.000Z WARN  net.http: slow response (b.swift:2)
            {"ts":"2026-11-21T10:00:02.000Z","level":"critical","label":"db","msg":"json line"}

            """
        try active.write(toFile: "\(logs)/app.log", atomically: true, encoding: .utf8)

        let all = try runProgram(cli, ["logs", directory.path])
        #expect(all.status == 0)
        let lines = all.stdout.split(separator: "\n")
        #expect(lines.count == 5)
        #expect(lines.first?.contains("first archived") == true && lines.last?.contains("json line") == true)

        let warnings = try runProgram(cli, ["logs", directory.path, "--level", "warning"])
        #expect(
            warnings.stdout.split(separator: "\n").map { String($0.prefix(40)) } == [
                "2026-11-20T10:00:01.000Z ERROR db: archi", "2026-11-21T10:00:01.000Z WARN  net.http:",
                "{\"ts\":\"2026-11-21T10:00:02.000Z\",\"level\"",
            ])
        let net = try runProgram(cli, ["logs", logs, "--label", "net.http"])
        #expect(net.stdout.split(separator: "\n").count == 2)

        let badLevel = try runProgram(cli, ["logs", directory.path, "--level", "loud"])
        #expect(badLevel.status == 64 && badLevel.stderr.contains("--level must be one of"))
        let missing = try runProgram(cli, ["logs", "\(directory.path)/nowhere"])
        #expect(missing.status == 1 && missing.stderr.contains("no such file or directory"))
    }
}
