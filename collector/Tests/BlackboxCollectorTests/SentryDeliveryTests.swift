import BlackboxFormat
import BlackboxTestSupport
import CollectorTestSupport
import Foundation
import Testing

@testable import BlackboxCollector

/// Issue 35 against Blackbox's own collector: a release-build crash of the real crash child, sent
/// once as a native bundle and once as Sentry envelopes (`blackbox upload --sentry-dsn`, and the
/// crash-time helper with a DSN), lands in the same group with the same story.
@Suite("Sentry out: Blackbox's reports delivered through the collector's Sentry endpoint")
struct SentryDeliveryTests {
    static var releaseApp: String { CrashTimeDeliveryTests.releaseApp }

    /// A crashed and relaunched release app: its diagnostics directory holds the processed report.
    static func crashedApp(_ scratch: TemporaryDirectory) async throws -> String {
        let diagnostics = "\(scratch.path)/native"
        let crashed = try await Tool.Running(Self.releaseApp, [diagnostics, "index", "main"], environment: [:]).wait()
        #expect(crashed.signal == SIGTRAP || crashed.signal == SIGILL, "\(crashed.status) \(crashed.stderr)")
        let next = try await Tool.Running(Self.releaseApp, [diagnostics, "process-pending", "next"], environment: [:])
            .wait()
        #expect(next.status == 0, "\(next.stderr)")
        return diagnostics
    }

    @Test("one crash, sent as a bundle and as a Sentry event, is one group of two with the same story")
    func bundleAndEnvelopeGroupTogether() async throws {
        try #require(FileManager.default.fileExists(atPath: Self.releaseApp), "no release crash child")
        let scratch = TemporaryDirectory()
        defer { scratch.remove() }
        let native = try await Self.crashedApp(scratch)
        let viaSentry = "\(scratch.path)/sentry"
        try FileManager.default.copyItem(atPath: native, toPath: viaSentry)
        // The copy is a second occurrence: the collector stores a report id once, whatever the protocol.
        let outbox = DiagnosticsDirectory(viaSentry).outbox
        let copied = try #require(
            try FileManager.default.contentsOfDirectory(atPath: outbox).first { $0.hasSuffix(".json") })
        var occurrence = try CrashReport.decode(try Data(contentsOf: URL(fileURLWithPath: "\(outbox)/\(copied)")))
        occurrence.id = UUID()
        try FileManager.default.removeItem(atPath: "\(outbox)/\(copied)")
        try CrashReport.makeEncoder().encode(occurrence).write(
            to: URL(fileURLWithPath: "\(outbox)/crash-\(occurrence.id.uuidString.lowercased()).json"))
        let collector = try await TestCollector.start()
        defer { Task { await collector.stop() } }

        let bundled = try await Tool.run(
            "blackbox", ["upload", native, "--server", collector.baseURL, "--key", collector.ingestKey])
        #expect(bundled.status == 0, "\(bundled.stderr)")
        // A finished archive, sent as Sentry structured logs (--sentry-logs), is found by log search.
        let archive =
            "\(DiagnosticsDirectory(viaSentry).logs)/crash-child.20261126T090000.000Z--20261126T100000.000Z.log"
        try "2026-11-26T09:30:00.125Z ERROR payments: card declined order=sentry-structured-7\n".write(
            toFile: archive, atomically: true, encoding: .utf8)
        let dsn = SentryIngestTests.dsn(collector)
        let sent = try await Tool.run("blackbox", ["upload", viaSentry, "--sentry-dsn", dsn, "--sentry-logs"])
        #expect(sent.status == 0, "\(sent.stderr)")
        #expect(sent.stdout.contains("uploaded 3 envelopes"), "the event, the run counts, the logs: \(sent.stdout)")
        await collector.server.indexPendingLogs()
        let hits = try await HTTP.searchLogs(
            collector.baseURL, token: collector.adminToken, query: "sentry-structured-7")
        let texts = hits.compactMap { ($0 as? [String: Any])?["text"] as? String }
        #expect(
            texts.contains {
                $0.hasPrefix("2026-11-26T09:30:00.125Z ERROR payments: card declined order=sentry-structured-7")
            },
            "\(texts)")
        let spooled =
            (try? FileManager.default.contentsOfDirectory(atPath: DiagnosticsDirectory(viaSentry).sentrySpool)) ?? []
        #expect(!spooled.contains { $0.hasSuffix(".envelope") }, "\(spooled)")

        let groups = try await HTTP.get(collector, "/api/v1/groups").json["items"] as? [[String: Any]] ?? []
        #expect(groups.count == 1, "\(groups.map { $0["title"] ?? "" })")
        let group = try #require(groups.first)
        #expect(group["count"] as? Int == 2, "\(group)")
        #expect((group["title"] as? String)?.contains("triggerIndexOutOfRange") == true, "\(group)")

        let reportID = try #require(group["latestReportID"] as? Int)
        let report = try CrashReport.decode(try await HTTP.get(collector, "/api/v1/reports/\(reportID)").body)
        #expect(
            report.metadata["sentry.sdk"] == "blackbox.swift \(BlackboxVersion.current)", "the latest is the Sentry one"
        )
        #expect(report.reason == "Fatal error: Index out of range", "\(report.reason ?? "none")")
        #expect(report.app == .init(name: "crash-child", version: "1.0", build: "42"))
        #expect(report.signal?.name == "SIGILL" || report.signal?.name == "SIGTRAP")
        #expect(report.logTail.contains { $0.contains("about to crash: index on main") }, "\(report.logTail)")
        let threads = try #require(report.threads)
        #expect(threads.count >= 3 && threads.contains { $0.name == "blackbox-writer" }, "\(threads.map(\.name))")
        #expect(report.images.contains { $0.path.hasSuffix("blackbox-crash-child") && $0.buildID != nil })

        let releases = try await HTTP.get(collector, "/api/v1/releases").json["items"] as? [[String: Any]] ?? []
        let release = try #require(releases.first { $0["version"] as? String == "1.0" }, "\(releases)")
        #expect(release["crashed"] as? Int == 2, "each delivery counted the crashed run: \(release)")
    }

    @Test("crash-time delivery to a DSN: the helper builds the report and the collector has it before the next start")
    func crashTimeDeliveryToADSN() async throws {
        try #require(FileManager.default.fileExists(atPath: Self.releaseApp), "no release crash child")
        let scratch = TemporaryDirectory()
        defer { scratch.remove() }
        // A collector process of its own: in-process, its handlers ran on the test pool that a loaded
        // parallel run keeps busy, and the helper's second envelope outlasted even a 20 s deadline.
        let collector = try await CollectorProcess.start(dataDirectory: "\(scratch.path)/collector")
        defer { collector.kill(SIGTERM) }
        let diagnostics = "\(scratch.path)/diagnostics"
        let dsn = SentryAuthentication.dsn(publicURL: collector.baseURL, ingestKey: collector.ingestKey, projectID: 1)
        let crashed = try await Tool.Running(
            Self.releaseApp, [diagnostics, "index", "main"],
            environment: [
                "CRASH_CHILD_DELIVERY_HELPER": "\(Tool.binDirectory)/blackbox",
                "CRASH_CHILD_DELIVERY_SENTRY_DSN": dsn,
                "CRASH_CHILD_DELIVERY_DEADLINE_MS": "20000",
            ]
        ).wait()
        #expect(crashed.signal == SIGTRAP || crashed.signal == SIGILL, "\(crashed.status) \(crashed.stderr)")
        let pending = DiagnosticsDirectory(diagnostics).pendingCrashes
        let raws = ((try? FileManager.default.contentsOfDirectory(atPath: pending)) ?? []).filter {
            $0.hasSuffix(".raw")
        }
        #expect(raws.isEmpty, "delivered, so the raw report is gone: \(raws) \(crashed.stderr)")
        let admin = [("Authorization", "Bearer \(collector.adminToken)")]
        let groups =
            try await HTTP.request("\(collector.baseURL)/api/v1/groups", headers: admin).json["items"]
            as? [[String: Any]] ?? []
        let group = try #require(groups.first, "\(crashed.stderr)")
        #expect((group["title"] as? String)?.contains("triggerIndexOutOfRange") == true, "\(group)")
        let reportID = try #require(group["latestReportID"] as? Int)
        let report = try CrashReport.decode(
            try await HTTP.request("\(collector.baseURL)/api/v1/reports/\(reportID)", headers: admin).body)
        #expect(report.metadata["sentry.sdk"] == "blackbox.swift \(BlackboxVersion.current)")
        #expect(report.logTail.contains { $0.contains("about to crash: index on main") }, "\(report.logTail)")
    }
}

extension SentryDeliveryTests {
    /// A loopback socket that listens but never accepts: a connection completes in the backlog and
    /// its request is never answered (a server that hangs mid-request).
    static func blackHole() throws -> LoopbackSocket { try LoopbackSocket(listening: true) }

    @Test("kill -9 while envelopes are in flight: the next start delivers each once")
    func killedWhileDelivering() async throws {
        let scratch = TemporaryDirectory()
        defer { scratch.remove() }
        let app = "\(scratch.path)/app"
        let crashed = try await Tool.run("blackbox-example", [app, "--crash"])
        #expect(crashed.signal != nil, "\(crashed.status) \(crashed.stderr)")

        let hole = try Self.blackHole()
        defer { close(hole.descriptor) }  // listening, never accepting
        let stuck = try Tool.start(
            "blackbox-example", [app], environment: ["SENTRY_DSN": "http://k@127.0.0.1:\(hole.port)/1"])
        let layout = DiagnosticsDirectory(app)
        func files(_ directory: String, _ suffix: String) -> [String] {
            ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).filter { $0.hasSuffix(suffix) }
        }
        // The crash, the failed ensure and the run counts are envelopes, the outbox empty, one in flight.
        let deadline = ContinuousClock.now + .seconds(60)
        while ContinuousClock.now < deadline
            && (files(layout.sentrySpool, ".envelope").count < 3 || !files(layout.outbox, ".json").isEmpty)
        {
            try await Task.sleep(for: .milliseconds(100))
        }
        try await Task.sleep(for: .milliseconds(500))
        stuck.kill(SIGKILL)
        #expect(
            files(layout.sentrySpool, ".envelope").count == 3,
            "spool: \(files(layout.sentrySpool, "")), outbox: \(files(layout.outbox, ""))")
        #expect(files(layout.outbox, ".json").isEmpty)

        let collector = try await TestCollector.start()
        defer { Task { await collector.stop() } }
        let relaunched = try await Tool.run(
            "blackbox-example", [app], environment: ["SENTRY_DSN": SentryIngestTests.dsn(collector)])
        #expect(relaunched.stdout.contains("sent what earlier runs left"), "\(relaunched.stdout)\(relaunched.stderr)")
        #expect(files(layout.sentrySpool, ".envelope").isEmpty)
        let groups = try await HTTP.get(collector, "/api/v1/groups").json["items"] as? [[String: Any]] ?? []
        let counts = groups.map { "\($0["title"] ?? "")=\($0["count"] ?? "")" }
        #expect(groups.count == 2 && groups.allSatisfy { $0["count"] as? Int == 1 }, "\(counts)")
        #expect(groups.contains { ($0["title"] as? String)?.contains("price(") == true }, "\(counts)")
        // The failed ensure comes back as the assertion it was, titled as a bundle's would be. The app
        // crashed before naming its frames: the next start named them from the image on disk
        // (llvm-symbolizer names carry the module, the in-process names do not).
        #expect(
            groups.contains { title in
                (title["title"] as? String).map { $0.hasPrefix("nonfatal in ") && $0.contains("checkout(cart:") }
                    == true
            }, "\(counts)")
    }
}

/// Issue 35 against a real Sentry-compatible server, Bugsink: what it stores of Blackbox's events.
@Suite("Sentry out: Bugsink receives Blackbox's crashes and assertions")
struct BugsinkDeliveryTests {
    static func exception(_ event: [String: Any]) -> [String: Any] {
        let data = event["data"] as? [String: Any] ?? [:]
        return ((data["exception"] as? [String: Any])?["values"] as? [[String: Any]])?.first ?? [:]
    }

    static func functions(_ event: [String: Any]) -> [String] {
        let frames = (exception(event)["stacktrace"] as? [String: Any])?["frames"] as? [[String: Any]] ?? []
        return frames.compactMap { $0["function"] as? String }
    }

    static func values(_ event: [String: Any], _ key: String) -> [[String: Any]] {
        ((event["data"] as? [String: Any])?[key] as? [String: Any])?["values"] as? [[String: Any]] ?? []
    }

    @Test("the example app's ensure and crash, sent by SentryDelivery at its next start")
    func appDeliveryAtTheNextStart() async throws {
        let bugsink = try await BugsinkPeer.start()
        defer { bugsink.stop() }
        let scratch = TemporaryDirectory()
        defer { scratch.remove() }
        let app = "\(scratch.path)/app"
        let environment = ["SENTRY_DSN": bugsink.dsn, "SENTRY_ENVIRONMENT": "test"]
        let crashed = try await Tool.run("blackbox-example", [app, "--crash"], environment: environment)
        #expect(crashed.signal != nil, "\(crashed.status) \(crashed.stderr)")
        let relaunched = try await Tool.run("blackbox-example", [app], environment: environment)
        #expect(relaunched.status == 0, "\(relaunched.stderr)")
        #expect(relaunched.stdout.contains("sent what earlier runs left"), "\(relaunched.stdout)")

        let events = try await bugsink.events()
        let layout = DiagnosticsDirectory(app)
        func entries(_ directory: String) -> [String] {
            (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        }
        #expect(
            events.count == 2,
            """
            \(events.map { $0["issue"] ?? "" }); left in the outbox: \(entries(layout.outbox)), \
            the spool: \(entries(layout.sentrySpool)); the crashed run: \(crashed.stdout)\(crashed.stderr); \
            the next: \(relaunched.stdout)\(relaunched.stderr)
            """)
        let fatal = try #require(events.first { ($0["data"] as? [String: Any])?["level"] as? String == "fatal" })
        let data = try #require(fatal["data"] as? [String: Any])
        #expect(data["release"] as? String == "blackbox-example@1.0+42" && data["environment"] as? String == "test")
        #expect(data["platform"] as? String == "native")
        #expect(fatal["issue"] as? String == "Fatal error: Index out of range", "\(fatal["issue"] ?? "")")
        #expect(Self.functions(fatal).contains { $0.contains("price(at:") }, "\(Self.functions(fatal))")
        #expect((Self.exception(fatal)["mechanism"] as? [String: Any])?["handled"] as? Bool == false)
        #expect(Self.values(fatal, "threads").count >= 2, "every thread: \(Self.values(fatal, "threads").count)")
        let crumbs = Self.values(fatal, "breadcrumbs").compactMap { $0["message"] as? String }
        #expect(crumbs.contains { $0.contains("about to read price 3 of 3") }, "\(crumbs)")
        let images = ((data["debug_meta"] as? [String: Any])?["images"] as? [[String: Any]]) ?? []
        #expect(images.contains { ($0["code_file"] as? String)?.hasSuffix("blackbox-example") == true })

        let handled = try #require(events.first { ($0["data"] as? [String: Any])?["level"] as? String == "error" })
        #expect((Self.exception(handled)["mechanism"] as? [String: Any])?["handled"] as? Bool == true)
        #expect((Self.exception(handled)["value"] as? String)?.contains("checkout with an empty cart") == true)
        #expect(Self.functions(handled).contains { $0.contains("checkout(cart:") }, "\(Self.functions(handled))")
    }

    @Test("a release-build crash: delivered at crash time, and again after a relaunch by the CLI; one issue")
    func releaseCrashBothWays() async throws {
        let app = CrashTimeDeliveryTests.releaseApp
        try #require(FileManager.default.fileExists(atPath: app), "no release crash child")
        let bugsink = try await BugsinkPeer.start()
        defer { bugsink.stop() }
        let scratch = TemporaryDirectory()
        defer { scratch.remove() }
        let atCrash = "\(scratch.path)/at-crash"
        let crashed = try await Tool.Running(
            app, [atCrash, "index", "main"],
            environment: [
                "CRASH_CHILD_DELIVERY_HELPER": "\(Tool.binDirectory)/blackbox",
                "CRASH_CHILD_DELIVERY_SENTRY_DSN": bugsink.dsn, "CRASH_CHILD_DELIVERY_DEADLINE_MS": "20000",
            ]
        ).wait()
        #expect(crashed.signal == SIGTRAP || crashed.signal == SIGILL, "\(crashed.status) \(crashed.stderr)")
        let pending =
            (try? FileManager.default.contentsOfDirectory(atPath: DiagnosticsDirectory(atCrash).pendingCrashes))
        #expect(pending?.contains { $0.hasSuffix(".raw") } == false, "delivered at crash time: \(crashed.stderr)")

        let later = "\(scratch.path)/later"
        _ = try await Tool.Running(app, [later, "index", "main"], environment: [:]).wait()
        let next = try await Tool.Running(app, [later, "process-pending", "next"], environment: [:]).wait()
        #expect(next.status == 0, "\(next.stderr)")
        let sent = try await Tool.run("blackbox", ["upload", later, "--sentry-dsn", bugsink.dsn])
        #expect(sent.status == 0, "\(sent.stderr)")

        let events = try await bugsink.events()
        #expect(events.count == 2, "\(events.map { $0["issue"] ?? "" })")
        #expect(Set(events.compactMap { $0["issue_id"] as? String }).count == 1, "Bugsink grouped them as one issue")
        #expect(events.first?["issue"] as? String == "Fatal error: Index out of range")

        // The debug id sent for the app's image is the one sentry-cli gives the same file, so Sentry
        // finds a debug file uploaded with `sentry-cli debug-files upload`.
        try #require(FileManager.default.isExecutableFile(atPath: SentryCLITests.sentryCLI), "run `make python-peers`")
        let check = try await Tool.Running(
            SentryCLITests.sentryCLI, ["debug-files", "check", app],
            environment: ["SENTRY_LOG_LEVEL": "warn", "HOME": NSTemporaryDirectory()]
        ).wait()
        let images = ((events.first?["data"] as? [String: Any])?["debug_meta"] as? [String: Any])?["images"]
        let appImage = try #require(
            (images as? [[String: Any]])?.first {
                ($0["code_file"] as? String)?.hasSuffix("blackbox-crash-child") == true
            })
        let debugID = try #require(appImage["debug_id"] as? String)
        #expect(check.stdout.contains("Debug ID: \(debugID)"), "\(debugID) vs \(check.stdout)")
        for event in events {
            let data = event["data"] as? [String: Any] ?? [:]
            #expect(data["release"] as? String == "crash-child@1.0+42")
            #expect(
                Self.functions(event).contains { $0.contains("triggerIndexOutOfRange") }, "\(Self.functions(event))")
            let threads = Self.values(event, "threads")
            #expect(threads.count >= 3 && threads.contains { $0["name"] as? String == "blackbox-writer" })
            let crumbs = Self.values(event, "breadcrumbs").compactMap { $0["message"] as? String }
            #expect(crumbs.contains { $0.contains("about to crash: index on main") }, "\(crumbs)")
        }
    }
}
