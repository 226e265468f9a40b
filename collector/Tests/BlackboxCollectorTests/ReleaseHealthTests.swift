import BlackboxFormat
import BlackboxTestSupport
import CollectorTestSupport
import Foundation
import Testing

@testable import BlackboxCollector

@Suite("Release health")
struct ReleaseHealthTests {
    @Test("session summaries: per version, by outcome; the manifest says format 3 only when it carries them")
    func summaries() throws {
        let start = Date(timeIntervalSince1970: 1_800_000_000)
        let sessions: [EndedSession] = [
            .init(appVersion: "1.0", startTime: start, endTime: start + 5, outcome: .clean),
            .init(appVersion: "1.1", startTime: start + 10, endTime: start + 20, outcome: .crashed),
            .init(appVersion: "1.0", startTime: start + 1, endTime: start + 30, outcome: .killed),
            .init(appVersion: nil, startTime: start + 2, endTime: start + 3, outcome: .hung),
        ]
        let summaries = SessionSummary.summarize(sessions)
        #expect(summaries.map(\.appVersion) == ["1.0", nil, "1.1"])
        #expect(summaries[0].clean == 1 && summaries[0].killed == 1 && summaries[0].total == 2)
        #expect(summaries[0].firstStart == start && summaries[0].lastEnd == start + 30)
        let manifest = BundleManifest(app: .init(name: "a"), host: "h", entries: [], sessions: summaries)
        #expect(manifest.formatVersion == 3)
        #expect(try BundleManifest.decode(try manifest.encoded()) == manifest)
        #expect(BundleManifest(app: .init(name: "a"), host: "h", entries: [], sessions: []).formatVersion == 1)
        // What a plan counts: bounded, one row per version.
        var hostile = summaries[0]
        hostile.clean = 5_000_000
        hostile.killed = -3
        let rows = IngestPlan.sessionRows([hostile, summaries[0]])
        #expect(rows == [.init(versionKey: "1.0", clean: 1_000_001, crashed: 0, hung: 0, killed: 1)])
    }

    @Test("a bundle of losses alone (manifest format 4) adds them to what was lost before arrival")
    func lossBundle() async throws {
        let collector = try await TestCollector.start()
        defer { Task { await collector.stop() } }
        let losses = [
            DeliveryLoss(appVersion: "2.3", category: "bundle", reason: "too_large", quantity: 2),
            DeliveryLoss(appVersion: "2.3", category: "log_item", reason: "cache_overflow", quantity: 5),
        ]
        let manifest = BundleManifest(app: .init(name: "shop", version: "2.3"), host: "h", entries: [], losses: losses)
        #expect(manifest.formatVersion == 4)
        let answer = try await HTTP.upload(
            collector, try BundleArchive.zip([("manifest.json", try manifest.encoded())]))
        #expect(answer.status == 201 || answer.status == 200, "\(answer.text)")
        let listed = try await HTTP.get(collector, "/api/v1/losses").json["items"] as? [[String: Any]] ?? []
        let pairs = Set(
            listed.compactMap { item -> String? in
                guard let reason = item["reason"] as? String, let quantity = item["quantity"] as? Int else {
                    return nil
                }
                return "\(item["version"] as? String ?? "") \(reason) \(quantity)"
            })
        #expect(pairs == ["2.3 too_large 2", "2.3 cache_overflow 5"], "\(listed)")
    }

    @Test(
        "the CLI counts what a server refused for good, and its next upload sends the count",
        arguments: ["bundle", "sentry"])
    func cliLosses(route: String) async throws {
        let collector = try await TestCollector.start { $0.limits.maxBodyBytes = 16 << 10 }
        defer { Task { await collector.stop() } }
        let scratch = TemporaryDirectory(prefix: "cli-losses")
        defer { scratch.remove() }
        let directory = scratch.path
        // A crash: a bundle carries its report and the active log's end (never the log alone).
        let ran = try await Tool.run(
            "blackbox-crash-child", [directory, "null-write", "main"], environment: ["SWIFT_BACKTRACE": "enable=no"])
        #expect(ran.signal == SIGSEGV, "\(ran.stderr)")
        // 96 KiB of lines that do not compress: the bundle is past the collector's 16 KiB (413).
        let logs = DiagnosticsDirectory(directory).logs
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: logs)) ?? []
        let active = try #require(entries.first { $0.hasSuffix(".log") }, "\(entries)")
        var generator = SystemRandomNumberGenerator()
        let noise = (0..<1_024).map { _ in
            (0..<72).map { _ in "abcdefghijklmnopqrstuvwxyz0123456789".randomElement(using: &generator)! }
        }.map { String($0) + "\n" }.joined()
        let handle = try #require(FileHandle(forWritingAtPath: "\(logs)/\(active)"))
        try handle.seekToEnd()
        try handle.write(contentsOf: Data(noise.utf8))
        try handle.close()
        // To the collector as bundles, or through its Sentry route as envelopes (a client report then).
        let dsn = collector.baseURL.replacingOccurrences(of: "http://", with: "http://\(collector.ingestKey)@") + "/1"
        let upload =
            route == "bundle"
            ? ["upload", directory, "--server", collector.baseURL, "--key", collector.ingestKey]
            : ["upload", directory, "--sentry-dsn", dsn]
        let refused = try await Tool.run("blackbox", upload)
        #expect(refused.status == 2, "refused for good: \(refused.stdout) \(refused.stderr)")
        let again = try await Tool.run("blackbox", upload)
        #expect(again.status == 0, "\(again.stdout) \(again.stderr)")
        let listed = try await HTTP.get(collector, "/api/v1/losses").json["items"] as? [[String: Any]] ?? []
        let lost = try #require(listed.first { $0["reason"] as? String == "too_large" }, "\(listed)")
        #expect(lost["category"] as? String == (route == "bundle" ? "bundle" : "error"), "\(lost)")
        #expect(lost["version"] as? String == "1.0", "\(lost)")
        #expect((lost["quantity"] as? Int ?? 0) >= 1, "\(lost)")
    }

    @Test("a crash and a run that give an empty version are both counted under \"unknown\"")
    func emptyVersionsMeet() async throws {
        let collector = try await TestCollector.start()
        defer { Task { await collector.stop() } }
        let report = Reports.crash(functions: ["shop.pay() -> ()"], version: "", host: "")
        let uploaded = try await HTTP.upload(
            collector, try BundleArchive.make(app: report.app, host: "h", reports: [report]))
        #expect(uploaded.status == 201, "\(uploaded.text)")
        let groups = try await HTTP.get(collector, "/api/v1/groups").json["items"] as? [[String: Any]] ?? []
        #expect((groups.first?["versions"] as? [String: Int]) == [TallyKey.unknown: 1], "\(groups)")
        #expect((groups.first?["hosts"] as? [String: Int]) == [TallyKey.unknown: 1], "\(groups)")
        let summary = SessionSummary(appVersion: "", clean: 1, firstStart: Date(), lastEnd: Date())
        #expect(IngestPlan.sessionRows([summary]).map(\.versionKey) == [TallyKey.unknown])
    }

    @Test("release health trusts only what one installation can have run; the rest of the bundle is kept")
    func implausibleSessions() {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        func summary(
            _ version: String, clean: Int, killed: Int = 0, span: TimeInterval, endingBefore: TimeInterval = 60
        )
            -> SessionSummary
        {
            SessionSummary(
                appVersion: version, clean: clean, killed: killed,
                firstStart: now - endingBefore - span, lastEnd: now - endingBefore)
        }
        let real = summary("1.0", clean: 40, killed: 2, span: 3600)
        let cases: [(String, SessionSummary)] = [
            // The review's attack: 10^6 runs of one version in one bundle, 100 such summaries.
            ("a million runs in an hour", summary("1.0", clean: 1_000_000, span: 3600)),
            ("more than 100 runs a second", summary("1.1", clean: 500, span: 2)),
            ("a negative count", summary("1.2", clean: 5, killed: -1, span: 3600)),
            ("an end before the start", summary("1.3", clean: 1, span: -10)),
            ("an end in the future", summary("1.4", clean: 1, span: 10, endingBefore: -3 * 86_400)),
            ("a start years ago", summary("1.5", clean: 1, span: 10, endingBefore: 800 * 86_400)),
        ]
        for (name, hostile) in cases {
            let (rows, dropped) = IngestPlan.plausibleSessionRows([hostile, real], receivedAt: now)
            #expect(dropped == 1, "\(name)")
            #expect(rows == [.init(versionKey: "1.0", clean: 40, crashed: 0, hung: 0, killed: 2)], "\(name): \(rows)")
        }
        // A crash loop is real: 9,000 runs over a day pass; past 10,000 in one bundle they stop counting.
        let loop = summary("2.0", clean: 9_000, span: 86_400)
        #expect(IngestPlan.plausibleSessionRows([loop], receivedAt: now).dropped == 0)
        let (rows, dropped) = IngestPlan.plausibleSessionRows(
            [loop, summary("2.1", clean: 1_500, span: 86_400)], receivedAt: now)
        #expect(dropped == 1 && rows.map(\.versionKey) == ["2.0"])

        // Requests: a busy server's minute passes; more than 100,000 a second, errors or crashes beyond
        // the requests, or a negative count do not.
        func requests(_ counts: RequestCounts, span: TimeInterval = 60) -> SessionSummary {
            SessionSummary(appVersion: "3.0", firstStart: now - 60 - span, lastEnd: now - 60, requests: counts)
        }
        let busy = requests(RequestCounts(total: 3_000_000, serverErrors: 12, crashed: 1))
        #expect(
            IngestPlan.plausibleSessionRows([busy], receivedAt: now).rows
                == [.init(versionKey: "3.0", clean: 0, crashed: 0, hung: 0, killed: 0, requests: busy.requests!)])
        for hostile in [
            RequestCounts(total: 7_000_000), RequestCounts(total: 10, serverErrors: 11),
            RequestCounts(total: 10, crashed: 11), RequestCounts(total: -1), RequestCounts(total: 5, serverErrors: -1),
            RequestCounts(total: .max, serverErrors: .max, crashed: .max),
        ] {
            let (kept, refused) = IngestPlan.plausibleSessionRows([requests(hostile), real], receivedAt: now)
            #expect(refused == 1 && kept.map(\.versionKey) == ["1.0"], "\(hostile)")
        }
    }

    @Test("a running server's requests reach the collector while it runs; its kill -9 and next start count none twice")
    func liveRequestCounts() async throws {
        let collector = try await TestCollector.start()
        defer { Task { await collector.stop() } }
        let scratch = TemporaryDirectory(prefix: "live-requests")
        defer { scratch.remove() }
        let directory = "\(scratch.path)/app"
        let upload = ["--collector", collector.baseURL, "--key", collector.ingestKey]
        func requests() async throws -> [String: Int]? {
            let releases = try await HTTP.get(collector, "/api/v1/releases").json["items"] as? [[String: Any]] ?? []
            return releases.first { $0["version"] as? String == "1.0" }?["requests"] as? [String: Int]
        }
        // 300 requests, one a tick (at least 15 s; a loaded CI run once served 400 faster than its
        // first part was sent), 30 of them 500s, then idle; counts sent every 500 ms while it runs.
        let server = try Tool.start(
            "blackbox-example",
            [
                directory, "--serve", "120", "--requests", "1", "--max-requests", "300", "--live-interval", "200",
                "--request-interval", "500",
            ] + upload)
        var seen: [[String: Int]] = []
        let started = ContinuousClock.now
        while ContinuousClock.now - started < .seconds(60) {
            if let counts = try await requests(), seen.last != counts { seen.append(counts) }
            if seen.last?["total"] == 300 { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        #expect(server.process.isRunning, "the counts came while the server ran")
        #expect(seen.last == ["total": 300, "serverErrors": 30, "crashed": 0], "\(seen)")
        #expect(seen.count >= 2, "sent in several parts as requests were served: \(seen)")
        // Each part as served: every tenth request a server error.
        for counts in seen { #expect(counts["serverErrors"] == (counts["total"] ?? 0) / 10, "\(counts)") }
        #expect(
            (try await HTTP.get(collector, "/api/v1/releases").json["items"] as? [[String: Any]])?.first?["sessions"]
                as? Int == 0, "no run has ended yet")

        // Killed after its counts were sent: the next start counts the run (killed) and no request again.
        server.kill(SIGKILL)
        _ = try await server.wait()
        let next = try await Tool.run("blackbox-example", [directory] + upload)
        #expect(next.status == 0, "\(next.stderr.suffix(2_000))")
        let releases = try await HTTP.get(collector, "/api/v1/releases").json["items"] as? [[String: Any]] ?? []
        let release = try #require(releases.first { $0["version"] as? String == "1.0" }, "\(releases)")
        #expect(release["killed"] as? Int == 1 && release["sessions"] as? Int == 1, "\(release)")
        #expect(
            release["requests"] as? [String: Int] == ["total": 300, "serverErrors": 30, "crashed": 0], "\(release)")
    }

    @Test(
        "5 runs of a version, 1 crashing and 1 SIGKILLed, give 5 sessions, 60 % crash-free, in the API and on the page")
    func fromChildProcesses() async throws {
        let collector = try await TestCollector.start()
        defer { Task { await collector.stop() } }
        let scratch = TemporaryDirectory(prefix: "release-health")
        defer { scratch.remove() }
        let directory = scratch.path
        let environment = ["SWIFT_BACKTRACE": "enable=no"]
        // Each start counts the run before it that did not end cleanly; the last one ends cleanly.
        // The crashing run is a server: 200 requests through `Blackbox.handleRequest`, 30 of them server
        // errors, 15 in flight when it crashed.
        for mode in ["clean-exit", "counted-requests", "clean-exit", "wait-to-be-killed", "clean-exit"] {
            if mode == "wait-to-be-killed" {
                let running = try Tool.start(
                    "blackbox-crash-child", [directory, mode, "main"], environment: environment)
                for _ in 0..<400 where !Tool.output(of: running).stdout.contains("ready") {
                    try await Task.sleep(for: .milliseconds(25))
                }
                running.kill(SIGKILL)
            } else {
                let result = try await Tool.run(
                    "blackbox-crash-child", [directory, mode, "main"], environment: environment)
                #expect(
                    mode == "counted-requests" ? result.signal == SIGSEGV : result.status == 0,
                    "\(mode): \(result.stderr)")
            }
        }
        let ended = DiagnosticsDirectory(directory).endedSessionFiles()
        #expect(ended.count == 5, "\(ended)")

        let upload = try await Tool.run(
            "blackbox", ["upload", directory, "--server", collector.baseURL, "--key", collector.ingestKey])
        #expect(upload.status == 0, "\(upload.stderr)")
        #expect(
            DiagnosticsDirectory(directory).endedSessionFiles().isEmpty, "counted once: the files went with the bundle")
        let releases = try await HTTP.get(collector, "/api/v1/releases").json["items"] as? [[String: Any]] ?? []
        let release = try #require(releases.first { $0["version"] as? String == "1.0" }, "\(releases)")
        #expect(release["sessions"] as? Int == 5 && release["clean"] as? Int == 3)
        #expect(release["crashed"] as? Int == 1 && release["killed"] as? Int == 1)
        #expect(release["abnormal"] as? Int == 1, "Sentry's name for a run that ended without a report")
        #expect((release["crashFreeRate"] as? Double).map { abs($0 - 0.6) < 1e-9 } == true, "\(release)")
        #expect(
            release["requests"] as? [String: Int] == ["total": 200, "serverErrors": 30, "crashed": 15], "\(release)")
        // The kill's termination report (the crash's raw report waits for a start that processes it).
        #expect(release["groups"] as? Int ?? 0 >= 1)

        // Uploading again sends no counts twice.
        #expect(
            try await Tool.run(
                "blackbox", ["upload", directory, "--server", collector.baseURL, "--key", collector.ingestKey]
            ).status == 0)
        let again = try await HTTP.get(collector, "/api/v1/releases").json["items"] as? [[String: Any]] ?? []
        #expect(again.first?["sessions"] as? Int == 5)

        // What a sender lost before arrival (a Sentry SDK's client report) shows beside the releases.
        let clientReport =
            #"{"timestamp":1,"discarded_events":[{"reason":"ratelimit_backoff","category":"error","quantity":3}]}"#
        let reported = try await HTTP.request(
            collector.baseURL + "/api/1/envelope/", method: .POST,
            headers: [("X-Sentry-Auth", "Sentry sentry_key=\(collector.ingestKey)")],
            body: Data("{}\n{\"type\":\"client_report\"}\n\(clientReport)\n".utf8))
        #expect(reported.status == 200, "\(reported.text)")

        let page = try await HTTP.get(collector, "/releases").text
        #expect(page.contains("<td class=\"number crash-free\">60.0 %</td>"), "\(page)")
        #expect(page.contains("<td class=\"number crash-free-requests\">92.50 %</td>"), "\(page)")
        #expect(page.contains("<td class=\"number error-free-requests\">77.50 %</td>"), "\(page)")
        #expect(
            page.contains(
                "<tr class=\"loss\"><td>unknown</td><td>error</td><td>ratelimit_backoff</td><td class=\"number\">3</td>"
            ),
            "\(page)")
        let detail = try await HTTP.get(collector, "/releases?version=1.0").text
        #expect(detail.contains("<dd class=\"sessions\">5</dd>") && detail.contains("1 crashed"))
        #expect(detail.contains("<dd class=\"requests\">200: 30 server errors, 15 cut short by a crash</dd>"))
        #expect(detail.components(separatedBy: "svg class=\"chart chart-sessions\"").count == 2)
        #expect(detail.contains("<tr class=\"group\"><td><a href=\"/groups/"), "the groups that hit it")

        // In a browser: the release's charts have a bar per day, and the pages raise no script errors.
        guard let chromium = WebUIBrowserTests.chromium else {
            #expect(!WebUIBrowserTests.required, "Chromium is not installed")
            return
        }
        let link = try await HTTP.request(
            "\(collector.baseURL)/api/v1/login-links", method: .POST,
            headers: [("Authorization", "Bearer \(collector.adminToken)")])
        let signIn = try #require(link.json["path"] as? String, "\(link.text)")
        let output = BrowserDriver.outputDirectory(for: "release-health")
        let run = try await BrowserDriver.run(
            chromium,
            [
                .navigate("\(collector.baseURL)\(signIn)?next=%2Freleases"),
                .evaluate("document.querySelector('tr.release .crash-free').textContent"),
                .evaluate("document.querySelectorAll('tr.loss').length"),
                .screenshot("1-releases.png"),
                .click("tr.release a"),
                .evaluate("document.querySelectorAll('svg.chart-sessions rect.bar').length"),
                .evaluate("document.querySelectorAll('svg.chart-crashed rect.bar').length"),
                .evaluate(
                    "[...document.querySelectorAll('svg.chart-sessions rect.bar')].filter(r => +r.getAttribute('height') > 0).length"
                ),
                .screenshot("2-release.png"),
            ], output: output)
        #expect(run.failed == nil && run.errors.isEmpty, "\(run.failed ?? "") \(run.errors)")
        try #require(run.values.count == 9, "\(run)")
        #expect(run.values[1] as? String == "60.0 %")
        #expect(run.values[2] as? Int == 1, "one row lost before arrival")
        #expect(run.values[5] as? Int == 30 && run.values[6] as? Int == 30 && run.values[7] as? Int == 1)
        print("release health screenshots: \(output)")
    }
}
