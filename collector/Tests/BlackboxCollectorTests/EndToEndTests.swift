import BlackboxFormat
import BlackboxTestSupport
import CollectorTestSupport
import Foundation
import Testing

@testable import BlackboxCollector

/// The whole path, as users run it: the example app and the `blackbox` CLI (built by the root
/// package) against a collector process.
@Suite("End to end: apps and the CLI against a collector process")
struct EndToEndTests {
    @Test("an app that crashed uploads on its next start: the crash group, the non-fatal and the logs appear")
    func crashGroupAndLogsAppear() async throws {
        let scratch = TemporaryDirectory()
        defer { scratch.remove() }
        let collector = try await CollectorProcess.start(dataDirectory: scratch.path + "/collector")
        defer { collector.kill(SIGTERM) }
        let app = scratch.path + "/app"
        let upload = ["--collector", collector.baseURL, "--key", collector.ingestKey]

        let crashed = try await Tool.run("blackbox-example", [app, "--crash"] + upload)
        #expect(crashed.signal == SIGILL || crashed.signal == SIGTRAP, "\(crashed.stderr.suffix(2000))")
        let relaunched = try await Tool.run("blackbox-example", [app] + upload)
        #expect(relaunched.status == 0, "\(relaunched.stderr.suffix(2000))")
        #expect(relaunched.stdout.contains("uploaded what earlier runs left"))

        let admin = [("Authorization", "Bearer \(collector.adminToken)")]
        let groups = try #require(
            try await HTTP.request("\(collector.baseURL)/api/v1/groups", headers: admin).json["items"]
                as? [[String: Any]])
        let crash = try #require(groups.first { $0["kind"] as? String == "crash" }, "\(groups)")
        #expect((crash["title"] as? String)?.contains("price(") == true, "\(crash)")
        #expect((crash["versions"] as? [String: Int]) == ["1.0": 1])
        #expect(groups.contains { $0["kind"] as? String == "nonfatal" })
        #expect(groups.count == 2)

        let hits = try await HTTP.searchLogs(collector.baseURL, token: collector.adminToken, query: "refused")
        #expect(!hits.isEmpty, "the log line before the crash is searchable")
        #expect(scratch.files(in: "app/outbox").filter { $0.hasSuffix(".json") }.isEmpty)
        #expect(scratch.files(in: "app/outbox/bundles").filter { $0.hasSuffix(".zip") }.isEmpty)
    }

    /// Issue 49, item 4: the CLI sent the failed `ensure` and said "uploaded", while the crash that
    /// followed it stayed in crashes/pending/.
    @Test("the CLI uploads a dead app's directory: its pending crash and its unnamed non-fatal, named")
    func cliUploadsADeadAppsCrash() async throws {
        let scratch = TemporaryDirectory()
        defer { scratch.remove() }
        let collector = try await CollectorProcess.start(dataDirectory: scratch.path + "/collector")
        defer { collector.kill(SIGTERM) }
        let app = scratch.path + "/app"
        let crashed = try await Tool.run("blackbox-example", [app, "--crash"])
        #expect(crashed.signal == SIGILL || crashed.signal == SIGTRAP, "\(crashed.stderr.suffix(2000))")
        #expect(!scratch.files(in: "app/crashes/pending").isEmpty, "the app died with its crash pending")

        let uploaded = try await Tool.run(
            "blackbox", ["upload", app, "--server", collector.baseURL, "--key", collector.ingestKey])
        #expect(uploaded.status == 0, "\(uploaded.stdout) \(uploaded.stderr)")
        #expect(uploaded.stdout.contains("processed 1 pending crash report"), "\(uploaded.stdout)")
        #expect(scratch.files(in: "app/crashes/pending").isEmpty)
        #expect(
            !scratch.files(in: "app/outbox").contains { $0.contains(".unnamed-") }, "\(scratch.files(in: "app/outbox"))"
        )

        let admin = [("Authorization", "Bearer \(collector.adminToken)")]
        let groups = try #require(
            try await HTTP.request("\(collector.baseURL)/api/v1/groups", headers: admin).json["items"]
                as? [[String: Any]])
        let titles = groups.map { $0["title"] as? String ?? "" }
        #expect(titles.contains { $0.contains("price(") }, "the crash: \(titles)")
        #expect(
            titles.contains { $0.hasPrefix("nonfatal in ") && $0.contains("checkout(cart:") }, "the ensure: \(titles)")
    }

    @Test("the uploader killed with SIGKILL mid-transfer uploads the bundle exactly once on its next run")
    func killedUploaderResumes() async throws {
        let scratch = TemporaryDirectory()
        defer { scratch.remove() }
        let collector = try await CollectorProcess.start(dataDirectory: scratch.path + "/collector")
        defer { collector.kill(SIGTERM) }
        // 3 MB of hex lines (about 1.5 MB zipped), sent at 30 KB/s: 50 s, killed as soon as it started.
        // The window is long because the polling below runs on the tests' shared cooperative pool,
        // which other tests can keep busy for seconds on a loaded machine (a fresh-clone CI missed a
        // 15 s window).
        scratch.write("app/logs/shop.20261121T100000.000Z--20261121T110000.000Z.log", Tool.randomLines(bytes: 3 << 20))
        let arguments = ["upload", scratch.path + "/app", "--server", collector.baseURL, "--key", collector.ingestKey]
        let slow = try Tool.start("blackbox", arguments + ["--limit-rate", "30000"])
        // Kill it once the bundle is spooled and its upload has started (not after a fixed time: on a
        // loaded machine a fixed sleep outlasted the whole 15 s transfer).
        let incoming = scratch.path + "/collector/tmp"
        let deadline = ContinuousClock.now + .seconds(120)
        while ContinuousClock.now < deadline
            && (scratch.files(in: "app/outbox/bundles").filter { $0.hasSuffix(".zip") }.isEmpty
                || ((try? FileManager.default.contentsOfDirectory(atPath: incoming)) ?? []).isEmpty)
        {
            try await Task.sleep(for: .milliseconds(20))
        }
        slow.kill(SIGKILL)
        let spooled = scratch.files(in: "app/outbox/bundles").filter { $0.hasSuffix(".zip") }
        #expect(spooled.count == 1)
        #expect(try await bundles(collector).isEmpty, "nothing was acknowledged before the kill")

        let resumed = try await Tool.run("blackbox", arguments)
        #expect(resumed.status == 0, "\(resumed.stderr)")
        #expect(resumed.stdout.contains("uploaded 1 bundle"))
        let stored = try await bundles(collector)
        #expect(stored.count == 1)
        #expect(stored.first?["uploadID"] as? String == spooled.first.map { String($0.dropLast(4)) })

        let again = try await Tool.run("blackbox", arguments)
        #expect(again.status == 0 && again.stdout.contains("uploaded 0 bundles"), "\(again.stdout)")
        #expect(try await bundles(collector).count == 1)
    }

    @Test("with the collector down the uploader backs off, then delivers everything once it is up")
    func serverDownBacksOff() async throws {
        let scratch = TemporaryDirectory()
        defer { scratch.remove() }
        // Learn a free port and the keys of a data directory, then take the collector down.
        let first = try await CollectorProcess.start(dataDirectory: scratch.path + "/collector")
        let port = try #require(URL(string: first.baseURL)?.port)
        let (key, admin) = (first.ingestKey, first.adminToken)
        first.kill(SIGTERM)

        let report = Reports.crash(functions: ["shop.Cart.total() -> Swift.Int"])
        scratch.write(
            "app/outbox/crash-\(report.id.uuidString.lowercased()).json", try CrashReport.makeEncoder().encode(report))
        scratch.write("app/logs/shop.log", "2026-11-22T00:00:00.000Z INFO  shop: waiting-for-collector\n")
        let uploader = try Tool.start(
            "blackbox",
            [
                "upload", scratch.path + "/app", "--server", "http://127.0.0.1:\(port)", "--key", key, "--attempts",
                "400",
                "--max-delay", "0.5",
            ])
        // Bring the collector back once the uploader has backed off at least once.
        let deadline = ContinuousClock.now + .seconds(60)
        while !Tool.output(of: uploader).stderr.contains("retrying in") && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(50))
        }
        let second = try await CollectorProcess.start(dataDirectory: scratch.path + "/collector", port: port)
        defer { second.kill(SIGTERM) }
        let result = try await uploader.wait()
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.contains("retrying in"), "it backed off while the collector was down")
        #expect(result.stdout.contains("uploaded 1 bundle"))
        let groups =
            try await HTTP.request(
                "\(second.baseURL)/api/v1/groups", headers: [("Authorization", "Bearer \(admin)")]
            ).json["items"] as? [[String: Any]]
        #expect(groups?.count == 1)
        #expect(scratch.files(in: "app/outbox/bundles").filter { $0.hasSuffix(".zip") }.isEmpty)
    }

    @Test("a 413 keeps the bundle with the reason, reports it, never resends it, and counts it as lost")
    func tooLargeIsKept() async throws {
        let scratch = TemporaryDirectory()
        defer { scratch.remove() }
        let collector = try await CollectorProcess.start(
            dataDirectory: scratch.path + "/collector", arguments: ["--max-body-bytes", "50000"])
        defer { collector.kill(SIGTERM) }
        scratch.write("app/logs/shop.20261121T100000.000Z--20261121T110000.000Z.log", Tool.randomLines(bytes: 400_000))
        let arguments = ["upload", scratch.path + "/app", "--server", collector.baseURL, "--key", collector.ingestKey]
        let refused = try await Tool.run("blackbox", arguments)
        #expect(refused.status == 2, "\(refused.stdout) \(refused.stderr)")
        #expect(refused.stderr.contains("HTTP 413 body_too_large"), "\(refused.stderr)")
        let rejected = scratch.files(in: "app/outbox/rejected")
        #expect(rejected.filter { $0.hasSuffix(".zip") }.count == 1)
        let reason = try String(
            contentsOfFile: scratch.path + "/app/outbox/rejected/" + #require(rejected.first { $0.hasSuffix(".json") }),
            encoding: .utf8)
        #expect(reason.contains("body_too_large"))

        // The next run sends the count of what was lost (a bundle of counts), never the refused bundle.
        let again = try await Tool.run("blackbox", arguments)
        #expect(again.status == 0 && again.stdout.contains("uploaded 1 bundle"), "\(again.stdout)")
        let stored = try await bundles(collector)
        // Its manifest alone: a few hundred bytes, where the refused bundle was past 50,000.
        #expect(stored.count == 1 && (stored.first?["size"] as? Int ?? .max) < 4_096, "\(stored)")
        let losses =
            try await HTTP.request(
                "\(collector.baseURL)/api/v1/losses", headers: [("Authorization", "Bearer \(collector.adminToken)")]
            ).json["items"] as? [[String: Any]] ?? []
        #expect(
            losses.contains { $0["reason"] as? String == "too_large" && $0["category"] as? String == "bundle" },
            "\(losses)")
        let third = try await Tool.run("blackbox", arguments)
        #expect(third.status == 0 && third.stdout.contains("uploaded 0 bundles"), "\(third.stdout)")
    }

    @Test("zips made by the zip tool and by Python's zipfile upload through the CLI and are searchable")
    func foreignZips() async throws {
        let scratch = TemporaryDirectory()
        defer { scratch.remove() }
        let collector = try await CollectorProcess.start(dataDirectory: scratch.path + "/collector")
        defer { collector.kill(SIGTERM) }
        scratch.write("plain/server.log", "2026-11-22T00:00:00.000Z INFO  web: zip-tool-needle\n")
        let zipped = try run(
            "/usr/bin/zip", ["-q", "-r", scratch.path + "/tool.zip", "server.log"], in: scratch.path + "/plain")
        #expect(zipped == 0, "zip is installed by make test-deps")
        let python = """
            import zipfile, sys
            with zipfile.ZipFile(sys.argv[1], "w", zipfile.ZIP_DEFLATED) as z:
                z.writestr("worker.log", "2026-11-22T00:00:00.000Z INFO  worker: python-zipfile-needle\\n")
            """
        #expect(
            try run("/usr/bin/python3", ["-c", python, scratch.path + "/python.zip"], in: scratch.path) == 0)

        let upload = try await Tool.run(
            "blackbox",
            [
                "upload", scratch.path + "/tool.zip", scratch.path + "/python.zip", "--server", collector.baseURL,
                "--key",
                collector.ingestKey,
            ])
        #expect(upload.status == 0, "\(upload.stderr)")
        #expect(upload.stdout.contains("uploaded 2 bundles"))
        #expect(try await bundles(collector).count == 2)
        for needle in ["zip-tool-needle", "python-zipfile-needle"] {
            let hits = try await HTTP.searchLogs(collector.baseURL, token: collector.adminToken, query: needle)
            #expect(!hits.isEmpty, "\(needle) is searchable")
        }
    }

    @Test("doctor and upload: a bad key or an unreachable collector is one clear line and a documented exit status")
    func clearFailures() async throws {
        let scratch = TemporaryDirectory()
        defer { scratch.remove() }
        let collector = try await CollectorProcess.start(dataDirectory: scratch.path + "/collector")
        defer { collector.kill(SIGTERM) }
        scratch.write("a.log", "line\n")
        let healthy = try await Tool.run(
            "blackbox", ["doctor", "--server", collector.baseURL, "--key", collector.ingestKey])
        #expect(healthy.status == 0 && healthy.stdout.contains("the collector accepts the key"), "\(healthy.stdout)")

        let badKey = try await Tool.run(
            "blackbox", ["upload", scratch.path + "/a.log", "--server", collector.baseURL, "--key", "nope"])
        #expect(badKey.status == 4)
        #expect(badKey.stderr.contains("invalid_key") && !badKey.stderr.contains("Fatal"), "\(badKey.stderr)")
        let doctorBadKey = try await Tool.run("blackbox", ["doctor", "--server", collector.baseURL, "--key", "nope"])
        #expect(doctorBadKey.status == 1 && doctorBadKey.stdout.contains("FAIL  the collector refuses the key"))

        let down = try await Tool.run(
            "blackbox",
            [
                "upload", scratch.path + "/a.log", "--server", "http://127.0.0.1:9", "--key", "k", "--attempts", "2",
                "--max-delay", "0.1",
            ])
        #expect(down.status == 3)
        #expect(down.stderr.contains("connection refused"), "\(down.stderr)")
        let missing = try await Tool.run(
            "blackbox", ["upload", scratch.path + "/nothing-here", "--server", collector.baseURL, "--key", "k"])
        #expect(missing.status == 1 && missing.stderr.contains("no such file or directory"))
        let noServer = try await Tool.run(
            "blackbox", ["upload", scratch.path + "/a.log"], environment: ["HOME": scratch.path])
        #expect(noServer.status == 1 && noServer.stderr.contains("no collector"), "\(noServer.stderr)")
    }

    @Test("upload shows a progress bar on a terminal and stays quiet otherwise")
    func progressBar() async throws {
        let scratch = TemporaryDirectory()
        defer { scratch.remove() }
        let collector = try await CollectorProcess.start(dataDirectory: scratch.path + "/collector")
        defer { collector.kill(SIGTERM) }
        scratch.write("tty/app.log", Tool.randomLines(bytes: 600_000))
        scratch.write("pipe/app.log", Tool.randomLines(bytes: 600_000))
        let command = [
            "\(Tool.binDirectory)/blackbox", "upload", scratch.path + "/tty", "--server", collector.baseURL, "--key",
            collector.ingestKey, "--limit-rate", "1000000",
        ].joined(separator: " ")
        // util-linux `script` runs the command on a pseudo-terminal and records what it printed.
        let status = try run(
            "/usr/bin/script", ["-qec", command, scratch.path + "/typescript"], in: scratch.path)
        #expect(status == 0)
        let typescript = try String(contentsOfFile: scratch.path + "/typescript", encoding: .utf8)
        #expect(typescript.contains("] 100% ") && typescript.contains("[###"), "\(typescript.suffix(500))")
        #expect(typescript.contains("uploaded 1 bundle"))

        let piped = try await Tool.run(
            "blackbox", ["upload", scratch.path + "/pipe", "--server", collector.baseURL, "--key", collector.ingestKey])
        #expect(piped.status == 0 && piped.stderr.isEmpty, "\(piped.stderr)")
        #expect(piped.stdout == "uploaded 1 bundle\n")
    }

    private func bundles(_ collector: CollectorProcess) async throws -> [[String: Any]] {
        try await HTTP.request(
            "\(collector.baseURL)/api/v1/bundles", headers: [("Authorization", "Bearer \(collector.adminToken)")]
        ).json["items"] as? [[String: Any]] ?? []
    }
}
