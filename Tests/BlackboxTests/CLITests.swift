import BlackboxFormat
import BlackboxSymbols
import BlackboxTestSupport
import Foundation
import Testing

@testable import Blackbox

/// The `blackbox` command, run as a process.
@Suite("blackbox CLI")
struct CLITests {
    var cli: String { helperExecutable("blackbox") }

    @Test("the version the CLI prints is the latest release in CHANGELOG.md, which a tag names")
    func version() throws {
        let printed = try runProgram(cli, ["--version"])
        #expect(printed.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == BlackboxVersion.current)
        let changelog = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../CHANGELOG.md").standardized
        let releases = try String(contentsOf: changelog, encoding: .utf8).split(separator: "\n")
            .filter { $0.hasPrefix("## ") && !$0.hasPrefix("## Unreleased") }
        #expect(releases.first?.hasPrefix("## \(BlackboxVersion.current) — ") == true, "\(releases.prefix(2))")
    }

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

    @Test("show --debug-dir: a binary stripped of its debug info gets file:line from a build-id debug directory")
    func showWithSeparatedDebugInfo() throws {
        let directory = TemporaryDirectory()
        let child = "\(directory.path)/child"
        try FileManager.default.copyItem(
            atPath: "\(Build.debug.binDirectory ?? "")/blackbox-crash-child", toPath: child)
        #expect(try runProgram("/usr/bin/objcopy", ["--only-keep-debug", child, child + ".debug"]).status == 0)
        #expect(try runProgram("/usr/bin/strip", ["-g", child]).status == 0)
        let buildID = try #require(ELFBuildID.read(path: child))
        let debugDirectory = "\(directory.path)/debug"
        let folder = "\(debugDirectory)/.build-id/\(buildID.prefix(2))"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        try FileManager.default.moveItem(atPath: child + ".debug", toPath: "\(folder)/\(buildID.dropFirst(2)).debug")
        _ = try runProgram(
            child, [directory.path, "null-write", "main"], environment: ["SWIFT_BACKTRACE": "enable=no"])
        let pending = "\(directory.path)/crashes/pending"
        let raw = "\(pending)/\(try #require(directoryEntries(pending).first))"

        let without = try runProgram(cli, ["show", raw])
        #expect(without.stdout.contains("bbx_test_null_write") && !without.stdout.contains("crashes.c:"))
        let with = try runProgram(cli, ["show", raw, "--debug-dir", debugDirectory])
        #expect(with.stdout.contains("bbx_test_null_write (") && with.stdout.contains("crashes.c:"), "\(with.stdout)")
        let missing = try runProgram(cli, ["show", raw, "--debug-dir", "\(directory.path)/nowhere"])
        #expect(missing.status == 1 && missing.stderr.contains("no such directory"))
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

    @Test(
        "deliver-crash: a file that is not a raw report, one outside crashes/pending/, a missing one, or no collector: one line, and nothing deleted"
    )
    func deliverCrashBadInput() throws {
        let directory = TemporaryDirectory()
        let bogus = "\(directory.path)/crash-1-2-11.raw"
        try "{\"hello\": 1}".write(toFile: bogus, atomically: true, encoding: .utf8)
        let stray = "\(directory.path)/crash-1-3-11.raw"
        try "blackbox-raw-crash 2\npid 3\nend\n".write(toFile: stray, atomically: true, encoding: .utf8)
        let collector = ["--server", "http://127.0.0.1:9", "--key", "k"]
        for (arguments, message) in [
            ([bogus] + collector, "not a Blackbox raw crash report"),
            ([stray] + collector, "not in a diagnostics directory's crashes/pending/ folder"),
            (["\(directory.path)/missing.raw"] + collector, "cannot open it"),
            ([bogus], "no collector"),
        ] {
            let result = try runProgram(cli, ["deliver-crash"] + arguments, environment: ["HOME": directory.path])
            #expect(result.status == 1 && !result.signaled, "\(result.stderr)")
            #expect(result.stderr.contains(message), "\(result.stderr)")
            #expect(result.stderr.split(separator: "\n").count == 1, "\(result.stderr)")
        }
        #expect(FileManager.default.fileExists(atPath: bogus) && FileManager.default.fileExists(atPath: stray))
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

    @Test("logs: --since and --until keep the lines of a time window, text and JSON alike")
    func logsTimeWindow() throws {
        let directory = TemporaryDirectory()
        let file = "\(directory.path)/app.log"
        try """
        2026-11-21T09:59:59.999Z INFO  a: before
        2026-11-21T10:00:00.000Z INFO  a: first inside
        {"ts":"2026-11-21T10:30:00.000Z","level":"info","label":"a","msg":"json inside"}
        2026-11-21T11:00:00.000Z INFO  a: at the end (excluded)
        not a log line (kept)

        """.write(toFile: file, atomically: true, encoding: .utf8)
        let window = try runProgram(
            cli, ["logs", file, "--since", "2026-11-21T10:00:00Z", "--until", "2026-11-21T11:00:00Z"])
        #expect(window.status == 0)
        let kept = window.stdout.split(separator: "\n")
        #expect(kept.count == 3, "\(window.stdout)")
        #expect(kept.first?.hasSuffix("first inside") == true && kept.last == "not a log line (kept)")
        #expect(kept.dropFirst().first?.contains("json inside") == true)
        let byDay = try runProgram(cli, ["logs", file, "--since", "2026-11-22"])
        #expect(byDay.stdout == "not a log line (kept)\n")
        let recent = try runProgram(cli, ["logs", file, "--since", "1h"])
        #expect(recent.stdout == "not a log line (kept)\n")
        let bad = try runProgram(cli, ["logs", file, "--since", "yesterday-ish"])
        #expect(bad.status == 64 && bad.stderr.contains("not a time or an age"))
    }

    @Test("logs --follow prints lines as they are appended, and follows the file across a rotation")
    func logsFollow() throws {
        let directory = TemporaryDirectory()
        let file = "\(directory.path)/app.log"
        try "2026-11-21T10:00:00.000Z INFO  a: old line\n".write(toFile: file, atomically: true, encoding: .utf8)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: cli)
        process.arguments = ["logs", "--follow", file, "--level", "warning"]
        let out = Pipe()
        process.standardOutput = out
        try process.run()
        defer {
            process.terminate()
            try? process.waitForExit(within: .seconds(30))
        }
        var seen = ""
        func waitFor(_ text: String) {
            let deadline = Date().addingTimeInterval(10)
            while !seen.contains(text) && Date() < deadline {
                seen += String(decoding: out.fileHandleForReading.availableData, as: UTF8.self)
            }
        }
        usleep(300_000)
        let handle = try #require(FileHandle(forWritingAtPath: file))
        handle.seekToEndOfFile()
        handle.write(Data("2026-11-21T10:00:01.000Z INFO  a: quiet\n2026-11-21T10:00:02.000Z WARN  a: appended\n".utf8))
        try handle.close()
        waitFor("appended")
        #expect(seen.contains("appended") && !seen.contains("quiet"))
        // Rotation: the file is renamed away and a new one takes its name.
        try FileManager.default.moveItem(atPath: file, toPath: file + ".1")
        try "2026-11-21T10:00:03.000Z ERROR a: after rotation\n".write(toFile: file, atomically: true, encoding: .utf8)
        waitFor("after rotation")
        #expect(seen.contains("after rotation"))
        #expect(!seen.contains("old line"), "follow starts at the end")
    }

    @Test("logs --journal prints exactly the lines a killed process left in its journal")
    func logsJournal() throws {
        let directory = TemporaryDirectory()
        let child = try startChild("blackbox-test-child", ["kill-target", directory.path, "4"])
        usleep(200_000)
        kill(child.processIdentifier, SIGKILL)
        try child.waitForExit()

        let withJournal = try runProgram(cli, ["logs", "--journal", directory.path])
        #expect(withJournal.status == 0, "\(withJournal.stderr)")
        let pending = try JournalInspector.pendingLines(path: "\(directory.path)/journal")
        // The next start replays exactly those records, after cutting the log file back to where
        // the view cut it (a kill may have torn the file's last line: `TornTailTests`).
        let recovered = try runProgram(helperExecutable("blackbox-test-child"), ["recover", directory.path])
        #expect(recovered.stdout.contains("recovered=\(pending.lines.count) "), "\(recovered.stdout) vs \(pending)")
        let after = try runProgram(cli, ["logs", directory.path])
        // Apart from the one line recovery adds about itself, the log now reads as the view did.
        let afterLines = after.stdout.split(separator: "\n").filter { !$0.contains(" blackbox: recovered ") }
        #expect(afterLines == withJournal.stdout.split(separator: "\n"))
    }

    @Test("bundle: a diagnostics directory into a zip with a manifest; split by --max-size; bad input is clear")
    func bundle() throws {
        let directory = TemporaryDirectory()
        let app = "\(directory.path)/app"
        let report = CrashReport(
            kind: .crash, app: .init(name: "shop", version: "2.0"),
            host: .init(name: "web-1", os: "Linux", kernel: "6", architecture: "x86_64"),
            process: .init(pid: 1, crashTime: Date()), thread: .init(id: 1, name: nil))
        try FileManager.default.createDirectory(atPath: "\(app)/outbox", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: "\(app)/logs", withIntermediateDirectories: true)
        try CrashReport.makeEncoder().encode(report).write(
            to: URL(fileURLWithPath: "\(app)/outbox/crash-\(report.id.uuidString.lowercased()).json"))
        // Not a report by the outbox's one definition (`DiagnosticsDirectory.reportFiles`), though it
        // decodes as one: the uploader leaves it, and so does `bundle`.
        try CrashReport.makeEncoder().encode(report).write(to: URL(fileURLWithPath: "\(app)/outbox/copy.json"))
        try String(repeating: "a log line\n", count: 300).write(
            toFile: "\(app)/logs/shop.log", atomically: true, encoding: .utf8)
        try String(repeating: "older line\n", count: 300).write(
            toFile: "\(app)/logs/shop.20261121T100000.000Z--20261121T110000.000Z.log", atomically: true, encoding: .utf8
        )

        let one = try runProgram(cli, ["bundle", app, "-o", "\(directory.path)/one.zip"])
        #expect(one.status == 0, "\(one.stderr)")
        let listing = try runProgram(
            "/usr/bin/python3",
            [
                "-c",
                "import zipfile,sys,json; z=zipfile.ZipFile(sys.argv[1]); m=json.loads(z.read('manifest.json')); "
                    + "print(sorted(z.namelist())); print(m['app']['name'], [e['kind'] for e in m['entries']])",
                "\(directory.path)/one.zip",
            ])
        #expect(
            listing.stdout.contains(
                "'logs/shop.20261121T100000.000Z--20261121T110000.000Z.log', 'logs/shop.log', 'manifest.json', 'reports/crash-"
            ), "\(listing.stdout)")
        #expect(listing.stdout.contains("shop ['report', 'log', 'log']"), "\(listing.stdout)")
        #expect(!listing.stdout.contains("copy.json"))

        let split = try runProgram(cli, ["bundle", app, "-o", "\(directory.path)/split.zip", "--max-size", "4000"])
        #expect(
            split.stdout.split(separator: "\n") == ["\(directory.path)/split-1.zip", "\(directory.path)/split-2.zip"])
        #expect(FileManager.default.fileExists(atPath: "\(directory.path)/split-2.zip"))

        let missing = try runProgram(cli, ["bundle", "\(directory.path)/nothing", "-o", "\(directory.path)/x.zip"])
        #expect(missing.status == 1 && missing.stderr.contains("no such file or directory"))
        let notZip = try runProgram(cli, ["bundle", app, "-o", "\(directory.path)/x.tar"])
        #expect(notZip.status == 64 && notZip.stderr.contains("must end in .zip"))
    }

    @Test("bundle and upload skip symbolic links that lead out of the directory")
    func bundleSkipsLinks() throws {
        let directory = TemporaryDirectory()
        let secret = "\(directory.path)/secret.txt"
        try "the secret\n".write(toFile: secret, atomically: true, encoding: .utf8)
        let app = "\(directory.path)/app"
        let plain = "\(directory.path)/plain"
        for folder in ["\(app)/logs", "\(app)/outbox", plain] {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        }
        try "a real line\n".write(toFile: "\(app)/logs/shop.log", atomically: true, encoding: .utf8)
        try "plain line\n".write(toFile: "\(plain)/a.log", atomically: true, encoding: .utf8)
        #expect(symlink(secret, "\(app)/logs/evil.log") == 0)
        #expect(symlink(secret, "\(plain)/evil.log") == 0)
        #expect(symlink(directory.path, "\(plain)/up") == 0)  // a linked directory: its files are outside
        for input in [app, plain] {
            let zip = "\(directory.path)/\(input.split(separator: "/").last!).zip"
            let made = try runProgram(cli, ["bundle", input, "-o", zip])
            #expect(made.status == 0, "\(made.stderr)")
            #expect(made.stderr.contains("skipping"), "\(input): \(made.stderr)")
            let listing = try runProgram(
                "/usr/bin/python3",
                [
                    "-c",
                    "import zipfile,sys; z=zipfile.ZipFile(sys.argv[1]); print([z.read(n) for n in z.namelist()])", zip,
                ])
            #expect(!listing.stdout.contains("the secret"), "\(input): \(listing.stdout)")
            #expect(listing.stdout.contains("line"), "\(input): the real files are still bundled")
        }
    }
}
