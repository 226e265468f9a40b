import BlackboxFormat
import BlackboxSymbols
import BlackboxTestSupport
import Foundation
import Testing

@testable import BlackboxCollector

/// Issue 18's production test, end to end: a release app stripped of its debug info crashes twice in
/// a mount namespace without the toolchain or LLVM, processes its reports at its next launch there
/// and uploads them; its debug file is archived with `blackbox symbols upload` afterwards (late
/// symbols). The collector then names the crash from debug info: function, file:line, the inlined
/// `Swift runtime failure` frame and reason, and regroups both occurrences under it.
@Suite("Production: symbols archived at build time name a stripped binary's crash on the collector")
struct ProductionSymbolicationTests {
    /// `make test-collector` names the root package's release directory (the crash child is built
    /// there by `make test-library` and again by `test-collector`).
    static var releaseBinDirectory: String {
        if let directory = ProcessInfo.processInfo.environment["BLACKBOX_RELEASE_BIN_DIR"] { return directory }
        return URL(fileURLWithPath: Tool.binDirectory).deletingLastPathComponent().appendingPathComponent("release")
            .path
    }

    /// As in the root package's ProductionSymbolsTests: the toolchain's and LLVM's bin directories
    /// are emptied and any other llvm-symbolizer hidden; the Swift runtime libraries stay.
    static let hideToolchain = """
        set -e
        mount --make-rprivate /
        toolchain=$(dirname "$(readlink -f "$(command -v swift || echo /opt/swift/usr/bin/swift)")")
        for directory in "$toolchain" /usr/lib/llvm-*/bin; do
            if [ -d "$directory" ]; then mount -t tmpfs tmpfs "$directory"; fi
        done
        for tool in $(which -a llvm-symbolizer 2>/dev/null || true); do mount --bind /dev/null "$tool"; done
        exec "$@"
        """

    static func inProduction(_ program: String, _ arguments: [String], environment: [String: String] = [:])
        async throws -> Tool.Result
    {
        try await Tool.Running(
            "/usr/bin/unshare", ["-m", "/bin/bash", "-c", hideToolchain, "production", program] + arguments,
            environment: environment
        ).wait()
    }

    /// Polls `condition` for up to 30 s (the service works in the background).
    static func eventually(_ condition: () async throws -> Bool) async throws -> Bool {
        for _ in 0..<300 {
            if try await condition() { return true }
            try await Task.sleep(for: .milliseconds(100))
        }
        return false
    }

    @Test("late symbols: the collector symbolicates, names the runtime failure and regroups, exactly once")
    func lateSymbolsNameTheCrash() async throws {
        try #require(getuid() == 0, "the production namespace needs root (unshare -m); CI runs as root")
        let built = "\(Self.releaseBinDirectory)/blackbox-crash-child"
        try #require(FileManager.default.fileExists(atPath: built), "no release crash child at \(built)")
        let scratch = TemporaryDirectory()
        defer { scratch.remove() }
        let app = "\(scratch.path)/app"
        let debugFile = "\(scratch.path)/build/app.debug"
        try FileManager.default.createDirectory(atPath: "\(scratch.path)/build", withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: built, toPath: app)
        for (tool, arguments) in [
            ("/usr/bin/objcopy", ["--only-keep-debug", app, debugFile]),
            ("/usr/bin/objcopy", ["--strip-debug", "--add-gnu-debuglink=\(debugFile)", app]),
        ] {
            #expect(try run(tool, arguments, in: scratch.path) == 0, "\(tool) \(arguments)")
        }
        let buildID = try #require(ELFBuildID.read(path: app))
        let directory = "\(scratch.path)/diagnostics"
        let backtraces = "\(scratch.path)/swift-backtrace"
        try FileManager.default.createDirectory(atPath: backtraces, withIntermediateDirectories: true)

        // The second crash (the group's latest report) also gets the Swift backtracer's log.
        for round in 0..<2 {
            let backtracer = "enable=yes,interactive=no,color=no,format=json,output-to=\(backtraces)"
            let crashed = try await Self.inProduction(
                app, [directory, "index", "main"],
                environment: round == 1 ? ["SWIFT_BACKTRACE": backtracer, "BLACKBOX_SWIFT_BACKTRACER": "always"] : [:])
            // The namespace's shell reports the app's death by its signal as 128 + the signal.
            #expect(
                [SIGILL, SIGTRAP].contains(crashed.signal ?? 0) || [132, 133].contains(crashed.status),
                "round \(round): \(crashed.status) \(crashed.signal ?? 0) \(crashed.stderr.suffix(2_000))")
        }
        let pending = (try? FileManager.default.contentsOfDirectory(atPath: "\(directory)/crashes/pending")) ?? []
        let processed = try await Self.inProduction(app, [directory, "process-pending", "next"])
        #expect(
            processed.status == 0 && processed.stdout.split(separator: "\n").count == 2,
            "pending before: \(pending); stdout: \(processed.stdout); stderr: \(processed.stderr.suffix(2_000))")

        // The symbolizer a collector host has: Debian's llvm package (not the Swift toolchain's).
        let debianSymbolizer = "/usr/bin/llvm-symbolizer"
        try #require(FileManager.default.fileExists(atPath: debianSymbolizer), "install Debian's llvm package")
        let collector = try await TestCollector.start { $0.symbolizerPath = debianSymbolizer }
        let uploaded = try await Tool.run(
            "blackbox", ["upload", directory, "--server", collector.baseURL, "--key", collector.ingestKey])
        #expect(uploaded.status == 0, "\(uploaded.stderr)")

        // Before symbols: named from the symbol table, the app's build-id listed as missing.
        await collector.server.symbolicatePending()
        let groups = try await HTTP.get(collector, "/api/v1/groups").json["items"] as? [[String: Any]] ?? []
        #expect(groups.count == 1)
        let before = try #require(groups.first)
        let oldGroup = try #require(before["id"] as? Int)
        #expect(before["count"] as? Int == 2)
        #expect((before["title"] as? String)?.contains("triggerIndexOutOfRange") == true, "\(before)")
        let missing = try await HTTP.get(collector, "/api/v1/symbols/missing").json["items"] as? [[String: Any]] ?? []
        #expect(missing.contains { $0["buildID"] as? String == buildID && $0["reports"] as? Int == 2 }, "\(missing)")

        // The release pipeline archives the debug file afterwards, with the sources it names.
        let archived = try await Tool.run(
            "blackbox",
            [
                "symbols", "upload", "--sources", "--server", collector.baseURL, "--token", collector.adminToken,
                debugFile,
            ])
        #expect(archived.status == 0 && archived.stdout.contains("uploaded"), "\(archived.stdout)\(archived.stderr)")
        #expect(archived.stdout.contains("sources: uploaded ("), "\(archived.stdout)")

        var newGroup: [String: Any] = [:]
        let regrouped = try await Self.eventually {
            let items = try await HTTP.get(collector, "/api/v1/groups").json["items"] as? [[String: Any]] ?? []
            guard let found = items.first(where: { $0["id"] as? Int != oldGroup }) else { return false }
            newGroup = found
            return found["count"] as? Int == 2
        }
        #expect(regrouped, "the occurrences never moved to a symbolicated group")
        #expect((newGroup["title"] as? String)?.contains("triggerIndexOutOfRange") == true, "\(newGroup)")
        let old = try await HTTP.get(collector, "/api/v1/groups/\(oldGroup)").json
        #expect(old["count"] as? Int == 0)
        let moved = old["movedTo"] as? [[String: Any]] ?? []
        #expect(moved.count == 1 && moved.first?["toGroupID"] as? Int == newGroup["id"] as? Int)
        #expect(moved.first?["count"] as? Int == 2)

        let reportID = try #require(newGroup["latestReportID"] as? Int)
        let reportJSON = try await HTTP.get(collector, "/api/v1/reports/\(reportID)").body
        let report = try CrashReport.decode(reportJSON)
        #expect(report.reason == "Swift runtime failure: Index out of range", "\(report.reason ?? "no reason")")
        let appImage = try #require(report.images.firstIndex { $0.buildID == buildID })
        let trap = try #require(report.frames.first { $0.imageIndex == appImage })
        #expect(trap.symbolication == .debugInfo, "\(trap)")
        #expect(
            trap.symbols.first?.function == "Swift runtime failure: Index out of range"
                && trap.symbols.first?.inlined == true)
        let function = try #require(trap.symbols.first { $0.function.contains("triggerIndexOutOfRange") })
        #expect(function.file?.hasSuffix("Triggers.swift") == true && (function.line ?? 0) > 0, "\(function)")
        #expect(
            report.notes.contains { $0.contains("symbolicated by the collector from app.debug") }, "\(report.notes)")
        let stillMissing = try await HTTP.get(collector, "/api/v1/symbols/missing").text
        #expect(!stillMissing.contains(buildID))
        let listed = try await HTTP.get(collector, "/api/v1/symbols").json["items"] as? [[String: Any]] ?? []
        #expect(listed.first?["reports"] as? Int == 2, "which reports use it: \(listed)")

        // Every frame the Swift backtracer named, the symbolicated report names too.
        let baseline = try Self.namedFrames(inBacktracerLogIn: backtraces)
        #expect(baseline.contains { $0.1.contains("triggerIndexOutOfRange") }, "\(baseline)")
        for (address, name) in baseline {
            let frame = report.frames.first { UInt64($0.address.dropFirst(2), radix: 16) == address }
            #expect(frame?.symbols.isEmpty == false, "\(name) at 0x\(String(address, radix: 16)) is unnamed")
        }

        // Every thread: each one the Swift backtracer lists is there, and the other threads' frames in
        // the app are named from the debug file like the crashed one's.
        let threads = try #require(report.threads, "\(report.notes)")
        let backtracerThreads = try Self.threadNames(inBacktracerLogIn: backtraces)
        #expect(backtracerThreads.count >= 3, "\(backtracerThreads)")
        for name in backtracerThreads where !name.isEmpty {
            #expect(threads.contains { $0.name == name }, "thread \(name) missing from \(threads.map(\.name))")
        }
        let appFrames = threads.dropFirst().flatMap(\.frames).filter { $0.imageIndex == appImage }
        #expect(!appFrames.isEmpty)
        #expect(appFrames.allSatisfy { $0.symbolication == .debugInfo }, "\(appFrames)")

        // The report page shows the source around the app's frames, the crashing line marked: from the
        // source bundle, as the stripped binary's report names the file.
        let page = try await HTTP.get(collector, "/reports/\(reportID)").text
        let sourceLines = try String(contentsOfFile: try #require(function.file), encoding: .utf8)
            .split(separator: "\n", omittingEmptySubsequences: false)
        let crashLine = try #require(function.line)
        let current = #"<span class="source-line current"><span class="line-number">\#(crashLine)</span>"#
        #expect(page.contains(current), "\(page)")
        let shown = sourceLines[crashLine - 1].trimmingCharacters(in: .whitespaces)
        #expect(page.contains(Self.htmlEscaped(shown)), "line \(crashLine): \(shown)")
        #expect(page.contains(#"<span class="line-number">\#(crashLine - 5)</span>"#), "five lines before")
        if let chromium = WebUIBrowserTests.chromium {
            let link = try await HTTP.request(
                "\(collector.baseURL)/api/v1/login-links", method: .POST,
                headers: [("Authorization", "Bearer \(collector.adminToken)")])
            let signIn = try #require(link.json["path"] as? String, "\(link.text)")
            let output = BrowserDriver.outputDirectory(for: "source-context")
            let run = try await BrowserDriver.run(
                chromium,
                [
                    .navigate("\(collector.baseURL)\(signIn)?next=%2Freports%2F\(reportID)"),
                    .evaluate("document.querySelector('.source-line.current .line-number').textContent"),
                    .screenshot("report-with-source.png"),
                ], output: output)
            #expect(run.failed == nil && run.errors.isEmpty, "\(run.failed ?? "") \(run.errors)")
            #expect(run.values.contains { $0 as? String == String(crashLine) }, "\(run.values)")
            print("source context screenshot: \(output)")
        } else {
            #expect(!WebUIBrowserTests.required, "Chromium is not installed")
        }

        // Idempotent: another pass or another upload of the same symbols changes nothing.
        #expect(await collector.server.symbolicatePending() == 0)
        let again = try await Tool.run(
            "blackbox",
            [
                "symbols", "upload", "--sources", "--server", collector.baseURL, "--token", collector.adminToken,
                debugFile,
            ])
        #expect(again.stdout.contains("already there"), "\(again.stdout)")
        #expect(again.stdout.contains("sources: already there"), "the same files make the same bundle: \(again.stdout)")
        await collector.server.symbolicatePending()
        let after = try await HTTP.get(collector, "/api/v1/groups").json["items"] as? [[String: Any]] ?? []
        #expect(after.map { $0["count"] as? Int } == [2])
        await collector.stop()
    }

    /// As the page templates escape text (swift-mustache's `htmlEscape`).
    static func htmlEscaped(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
            .replacingOccurrences(of: "'", with: "&#39;")
    }

    /// The crashed thread's frames the backtracer named (address → name), from the first JSON log.
    static func threadNames(inBacktracerLogIn directory: String) throws -> [String] {
        let files = ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).sorted()
        let file = try #require(files.first, "the Swift backtracer wrote no log")
        let data = try Data(contentsOf: URL(fileURLWithPath: "\(directory)/\(file)"))
        let log = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let threads = try #require(log["threads"] as? [[String: Any]], "\(log.keys)")
        return threads.map { $0["name"] as? String ?? "" }
    }

    static func namedFrames(inBacktracerLogIn directory: String) throws -> [(UInt64, String)] {
        let files = ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).sorted()
        let file = try #require(files.first, "the Swift backtracer wrote no log")
        let data = try Data(contentsOf: URL(fileURLWithPath: "\(directory)/\(file)"))
        let log = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let threads = try #require(log["threads"] as? [[String: Any]], "\(log.keys)")
        let crashed = try #require(threads.first { $0["crashed"] as? Bool == true })
        let frames = try #require(crashed["frames"] as? [[String: Any]])
        return frames.compactMap { frame in
            guard frame["inlined"] as? Bool != true, let symbol = frame["symbol"] as? String,
                let address = (frame["address"] as? String).flatMap({ UInt64($0.dropFirst(2), radix: 16) })
            else { return nil }
            return (address, symbol)
        }
    }
}
