import BlackboxFormat
import BlackboxTestSupport
import CollectorTestSupport
import Foundation
import GRDB
import Testing

@testable import BlackboxCollector

@Suite("Alerts: rules and payloads")
struct AlertRuleTests {
    let now = Date(timeIntervalSince1970: 1_800_000_000)

    func webhook(_ id: Int64, _ events: [AlertEvent], threshold: Webhook.Threshold? = nil) -> Webhook {
        Webhook(
            id: id, projectID: 1, url: "http://x/", events: events, format: .json, threshold: threshold, createdAt: now,
            secret: nil)
    }

    @Test("a new group, a regression and a crossed threshold each give one alert per webhook that asked for it")
    func rules() {
        let hooks = [
            webhook(1, [.newGroup, .regression]), webhook(2, [.threshold], threshold: .init(count: 3, minutes: 10)),
        ]
        #expect(AlertRules.windows(for: hooks) == [10])
        var occurrence = AlertRules.Occurrence(
            groupID: 7, createdGroup: true, regressedAt: nil, recentCounts: [10: 1], receivedAt: now)
        #expect(
            AlertRules.alerts(for: occurrence, webhooks: hooks) == [
                .init(webhookID: 1, event: .newGroup, dedupeKey: "new-group:7")
            ])
        occurrence.createdGroup = false
        occurrence.recentCounts = [10: 3]
        #expect(AlertRules.alerts(for: occurrence, webhooks: hooks).isEmpty, "3 is not more than 3")
        occurrence.recentCounts = [10: 4]
        occurrence.regressedAt = now
        let alerts = AlertRules.alerts(for: occurrence, webhooks: hooks)
        #expect(alerts.map(\.event) == [.regression, .threshold])
        #expect(alerts.last?.occurrences == 4 && alerts.last?.dedupeKey == "threshold:7:\(1_800_000_000 / 600)")
        // The same crossing later in the same window has the same key: stored once.
        occurrence.receivedAt = now.addingTimeInterval(60)
        occurrence.regressedAt = nil
        #expect(AlertRules.alerts(for: occurrence, webhooks: hooks).first?.dedupeKey == alerts.last?.dedupeKey)
    }

    @Test(
        "a release regresses when its failed-request rate passes the factor times the last release's that served enough"
    )
    func releaseRegressions() {
        let rule = Webhook.ReleaseRegression(factor: 2, minimumRequests: 100)
        let hooks = [
            Webhook(
                id: 1, projectID: 1, url: "http://x/", events: [.releaseRegression], format: .json, threshold: nil,
                releaseRegression: rule, createdAt: now, secret: nil),
            webhook(2, [.newGroup]),
        ]
        func release(_ version: String, _ requests: Int, _ failed: Int, seen: TimeInterval = 0)
            -> ReleaseRegressionRule.Release
        {
            .init(version: version, requests: requests, failed: failed, firstSeen: now + seen)
        }
        let old = release("1.0", 1000, 10)  // 1 %
        let canary = release("1.1", 20, 0)  // too few requests to compare with
        func alerts(_ current: ReleaseRegressionRule.Release, _ others: [ReleaseRegressionRule.Release] = [])
            -> [AlertRules.Alert]
        {
            ReleaseRegressionRule.alerts(for: current, among: [old, canary, current] + others, webhooks: hooks)
        }
        #expect(
            alerts(release("1.2", 200, 5)) == [
                .init(
                    webhookID: 1, event: .releaseRegression, dedupeKey: "release-regression:1.2", version: "1.2",
                    previousVersion: "1.0")
            ], "2.5 % against 1 %: compared with 1.0, not the canary")
        #expect(alerts(release("1.2", 200, 4)).isEmpty, "2 % is not more than twice 1 %")
        #expect(alerts(release("1.2", 99, 50)).isEmpty, "too few requests yet")
        #expect(alerts(release("0.9", 1000, 900)).isEmpty, "nothing older served enough")
        #expect(
            ReleaseRegressionRule.previous(
                of: release("1.10", 500, 0), among: [old, release("1.9", 100, 0)], minimumRequests: 100)?.version
                == "1.9")
        // A release without failures counts as one: 3 of 1000 is a regression of 0 of 1000, 1 is not.
        let perfect = [release("2.0", 1000, 0)]
        #expect(alerts(release("2.1", 1000, 2), perfect).isEmpty)
        #expect(alerts(release("2.1", 1000, 3), perfect).map(\.previousVersion) == ["2.0"])
        // Versions that are not semantic versions are ordered by when they were first seen.
        let deployed = [release("a1b2c3", 1000, 10, seen: 60), release("d4e5f6", 1000, 0, seen: 120)]
        #expect(
            ReleaseRegressionRule.alerts(
                for: release("0f9e8d", 1000, 50, seen: 180), among: deployed, webhooks: hooks
            ).map(\.previousVersion) == ["d4e5f6"])
        #expect(
            ReleaseRegressionRule.alerts(
                for: release("0f9e8d", 1000, 50, seen: 30), among: deployed, webhooks: hooks
            ).isEmpty, "the first one seen has nothing before it")
        #expect(alerts(release(CrashGroup.otherValues, 1000, 900)).isEmpty)
    }

    @Test("a release regression's payload names both releases and links the release page")
    func releasePayload() throws {
        func health(_ version: String, _ requests: RequestCounts) -> ReleaseHealth {
            ReleaseHealth(
                version: version, sessions: 1, clean: 1, crashed: 0, hung: 0, killed: 0, crashFreeRate: 1,
                requests: requests, groups: 0, firstDay: now, lastDay: now)
        }
        let delivery = AlertDelivery(
            id: 6, webhookID: 1, event: .releaseRegression, version: "2.0 <beta>", previousVersion: "1.9",
            state: .pending, attempts: 0, createdAt: now)
        let payload = AlertPayload(
            event: .releaseRegression, delivery: delivery,
            subject: .release(
                health("2.0 <beta>", RequestCounts(total: 400, serverErrors: 20, crashed: 4)),
                previous: health("1.9", RequestCounts(total: 1000, serverErrors: 10))),
            baseURL: "https://c.example")
        let json = try #require(try JSONSerialization.jsonObject(with: payload.body(.json)) as? [String: Any])
        #expect(json["group"] == nil && json["event"] as? String == "release-regression")
        let release = try #require(json["release"] as? [String: Any])
        #expect(release["version"] as? String == "2.0 <beta>" && release["failureRate"] as? Double == 0.06)
        #expect(release["url"] as? String == "https://c.example/releases?version=2.0%20%3Cbeta%3E")
        #expect((release["requests"] as? [String: Any])?["crashed"] as? Int == 4)
        #expect((json["previousRelease"] as? [String: Any])?["failureRate"] as? Double == 0.01)
        #expect(json["text"] as? String == "Release 2.0 <beta> fails 6 % of requests; 1.9 failed 1 %")
        let slack = try #require(try JSONSerialization.jsonObject(with: payload.body(.slack)) as? [String: Any])
        #expect(
            (slack["text"] as? String)?.hasPrefix(
                "*Release 2.0 &lt;beta&gt; fails 6 % of requests; 1.9 failed 1 %* (<https://c.example/releases?version=2.0%20%3Cbeta%3E|release 2.0 &lt;beta&gt;>)"
            ) == true, "\(slack)")
    }

    @Test("the release-regression migration keeps a SQLite database's webhooks and queued deliveries")
    func migrationKeepsDeliveries() async throws {
        let scratch = TemporaryDirectory()
        defer { scratch.remove() }
        try FileManager.default.createDirectory(atPath: scratch.path, withIntermediateDirectories: true)
        let store = try SQLiteStore(path: "\(scratch.path)/collector.sqlite")
        try SQLiteSchema.migrator.migrate(store.pool, upTo: "v14-request-health")
        try await store.pool.write { db in
            try db.execute(sql: "INSERT INTO projects (id, name, created_at) VALUES (1, 'shop', 0)")
            try db.execute(
                sql: """
                    INSERT INTO crash_groups (id, project_id, signature, signature_version, signature_text, kind, title,
                        count, first_seen, last_seen)
                    VALUES (3, 1, 's', 1, 's', 'crash', 't', 1, 0, 0);
                    INSERT INTO webhooks (id, project_id, url, events, format, created_at)
                    VALUES (2, 1, 'https://x/', 'new-group', 'json', 0);
                    INSERT INTO alert_deliveries (id, webhook_id, group_id, event, dedupe_key, created_at, next_attempt_at)
                    VALUES (5, 2, 3, 'new-group', 'new-group:3', 0, 0);
                    """)
        }
        try await store.migrate()
        let deliveries = try await store.deliveries(webhookID: 2, in: ProjectScope(projectID: 1), page: Page(limit: 5))
        #expect(deliveries.map(\.id) == [5] && deliveries.first?.groupID == 3 && deliveries.first?.version == nil)
        let due = try await store.claimDueDeliveries(
            now: Date(), claimedUntil: Date() + 60, limit: 5, perWebhook: 2, perProject: 4)
        #expect(due.map(\.0.id) == [5] && due.first?.1.releaseRegression == nil)
        let violations = try await store.pool.read { db in try db.foreignKeyViolations().next() }
        #expect(violations == nil)
    }

    @Test("retries back off exponentially to an hour and end after the last attempt")
    func backoff() {
        #expect(AlertRules.retryDelay(afterAttempts: 1, jitter: 0) == .seconds(2))
        #expect(AlertRules.retryDelay(afterAttempts: 3, jitter: 0) == .seconds(8))
        #expect(AlertRules.retryDelay(afterAttempts: 14, jitter: 0) == .seconds(3600))
        #expect(AlertRules.retryDelay(afterAttempts: AlertRules.maxAttempts, jitter: 0) == nil)
    }

    @Test("webhook requests are validated with a reason")
    func validation() throws {
        let good = try NewWebhook(json: Data(#"{"url": "https://hooks.example/x", "events": ["threshold"]}"#.utf8))
        #expect(good.threshold == .init(count: 100, minutes: 60) && good.format == .json && good.secret == nil)
        #expect(good.releaseRegression == nil)
        let release = try NewWebhook(json: Data(#"{"url": "https://x/", "events": ["release-regression"]}"#.utf8))
        #expect(release.releaseRegression == .init(factor: 2, minimumRequests: 1000) && release.threshold == nil)
        for (body, fragment) in [
            (#"{"url": "ftp://x/", "events": ["new-group"]}"#, "http or https"),
            (#"{"url": "https://u:p@x/", "events": ["new-group"]}"#, "without credentials"),
            (#"{"url": "https://x/", "events": []}"#, "at least one"),
            (#"{"url": "https://x/", "events": ["everything"]}"#, "not everything"),
            (#"{"url": "https://x/", "events": ["new-group"], "format": "xml"}"#, "json or slack"),
            (#"{"url": "https://x/", "events": ["threshold"], "threshold": {"count": 0, "minutes": 5}}"#, "count of 1"),
            (#"{"url": "https://x/", "events": ["new-group"], "secret": ""}"#, "1 to 256"),
            (
                #"{"url": "https://x/", "events": ["release-regression"], "releaseRegression": {"factor": 1, "minimumRequests": 5}}"#,
                "factor of 1.01"
            ),
            (
                #"{"url": "https://x/", "events": ["release-regression"], "releaseRegression": {"factor": 2, "minimumRequests": 0}}"#,
                "minimumRequests of 1"
            ),
        ] {
            #expect(throws: APIError.self) { try NewWebhook(json: Data(body.utf8)) }
            do {
                _ = try NewWebhook(json: Data(body.utf8))
            } catch {
                #expect(error.message.contains(fragment), "\(body): \(error.message)")
            }
        }
    }

    @Test("a collector built but never run is released cleanly (its alert sender holds no HTTP client yet)")
    func builtButNeverRun() throws {
        // AsyncHTTPClient traps in the deinit of a client that was not shut down: this test process
        // would die here if the sender made its client before running.
        let scratch = TemporaryDirectory(prefix: "built-not-run")
        defer { scratch.remove() }
        for _ in 0..<2 { _ = try CollectorServer(configuration: CollectorConfiguration(dataDirectory: scratch.path)) }
    }

    @Test("the Slack variant escapes mrkdwn and links the group; the signature is HMAC-SHA256 of the body")
    func payloads() throws {
        let report = Reports.crash(functions: ["shop.a<b>() -> ()"], message: "x & y")
        var group = CrashGroup(
            id: 9, projectID: 1, signature: "s", signatureVersion: 1, kind: "crash", title: "SIGSEGV in shop.a<b>(…)",
            count: 2, firstSeen: now, lastSeen: now, latestReportID: 1, versions: ["1.0": 2], hosts: [:])
        group.state = .regressed
        let delivery = AlertDelivery(
            id: 5, webhookID: 1, event: .regression, groupID: 9, occurrences: nil, state: .pending, attempts: 0,
            createdAt: now)
        let payload = AlertPayload(
            event: .regression, delivery: delivery, subject: .group(group, latestReport: report),
            baseURL: "https://c.example")
        let slack = try #require(try JSONSerialization.jsonObject(with: payload.body(.slack)) as? [String: Any])
        let text = try #require(slack["text"] as? String)
        #expect(
            text.contains("*Regression: SIGSEGV in shop.a&lt;b&gt;(…)* (<https://c.example/groups/9|group 9>)"),
            "\(text)")
        let json = try #require(try JSONSerialization.jsonObject(with: payload.body(.json)) as? [String: Any])
        #expect(json["event"] as? String == "regression")
        let jsonGroup = try #require(json["group"] as? [String: Any])
        #expect(jsonGroup["id"] as? Int == 9 && jsonGroup["state"] as? String == "regressed")
        #expect(jsonGroup["url"] as? String == "https://c.example/groups/9")
        let body = Data("{\"a\":1}".utf8)
        #expect(
            AlertPayload.signature(of: body, secret: "s3cret")
                == WebhookReceiver.expectedSignature(body, secret: "s3cret"))
        // A known answer (RFC 4231 test case 2).
        #expect(
            AlertPayload.signature(of: Data("what do ya want for nothing?".utf8), secret: "Jefe")
                == "sha256=5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
    }
}

@Suite("Alerts: webhooks delivered over HTTP")
struct WebhookDeliveryTests {
    func createWebhook(_ collector: TestCollector, _ json: String) async throws -> [String: Any] {
        let created = try await HTTP.request(
            "\(collector.baseURL)/api/v1/webhooks", method: .POST,
            headers: [("Authorization", "Bearer \(collector.adminToken)"), ("Content-Type", "application/json")],
            body: Data(json.utf8))
        #expect(created.status == 201, "\(created.text)")
        return created.json
    }

    func upload(_ collector: TestCollector, function: String, version: String) async throws {
        let report = Reports.crash(functions: [function, "shop.main() -> ()"], version: version)
        let result = try await HTTP.upload(
            collector, try BundleArchive.make(app: report.app, host: "h", reports: [report]))
        #expect(result.status == 201, "\(result.text)")
    }

    @Test("new group, threshold and regression arrive once each, signed; the deliveries are listed")
    func events() async throws {
        let receiver = WebhookReceiver()
        try await receiver.start()
        defer { Task { await receiver.stop() } }
        let collector = try await TestCollector.start {
            $0.alertPollInterval = .milliseconds(100)
            $0.webhookTargets = .loopbackForTests
        }
        defer { Task { await collector.stop() } }
        let webhook = try await createWebhook(
            collector,
            #"{"url": "\#(receiver.url)", "events": ["new-group", "regression", "threshold"], "secret": "s3cret", "threshold": {"count": 2, "minutes": 60}}"#
        )
        #expect(webhook["signed"] as? Bool == true && webhook["secret"] == nil, "the secret is never shown")

        for _ in 0..<3 { try await upload(collector, function: "shop.pay() -> ()", version: "1.1") }
        let groups = try await HTTP.get(collector, "/api/v1/groups").json["items"] as? [[String: Any]] ?? []
        let id = try #require(groups.first?["id"] as? Int)
        let resolved = try await HTTP.request(
            "\(collector.baseURL)/api/v1/groups/\(id)", method: .PATCH,
            headers: [("Authorization", "Bearer \(collector.adminToken)")],
            body: Data(#"{"state": "resolved", "resolvedIn": "1.2"}"#.utf8))
        #expect(resolved.status == 200)
        try await upload(collector, function: "shop.pay() -> ()", version: "1.1")  // older: no regression
        try await upload(collector, function: "shop.pay() -> ()", version: "1.3")

        let received = try await receiver.wait(for: .seconds(30)) { $0.count >= 3 }
        // Anything queued twice would arrive within the poll interval: give it time to show.
        try await Task.sleep(for: .seconds(1))
        let all = receiver.all
        #expect(all.map(\.event).sorted() == ["new-group", "regression", "threshold"], "\(all.map(\.event))")
        #expect(Set(all.map(\.delivery)).count == all.count)
        for delivery in received {
            #expect(delivery.signature == WebhookReceiver.expectedSignature(delivery.body, secret: "s3cret"))
            let group = delivery.json["group"] as? [String: Any]
            #expect(group?["id"] as? Int == id && (group?["url"] as? String)?.hasSuffix("/groups/\(id)") == true)
            #expect(delivery.json["event"] as? String == delivery.event)
            let latest = delivery.json["latestReport"] as? [String: Any]
            #expect((latest?["topFrames"] as? [String])?.contains("shop.pay() -> ()") == true, "\(delivery.json)")
        }
        #expect(all.first { $0.event == "threshold" }?.json["occurrences"] as? Int == 3)
        let webhookID = try #require(webhook["id"] as? Int)
        let deliveries = try await HTTP.get(collector, "/api/v1/webhooks/\(webhookID)/deliveries").json["items"]
        let states = (deliveries as? [[String: Any]])?.map { $0["state"] as? String }
        #expect(states == ["delivered", "delivered", "delivered"], "\(String(describing: deliveries))")
    }

    @Test("a test receiver whose port is taken fails to start instead of waiting for it")
    func receiverPortTaken() async throws {
        let first = WebhookReceiver()
        try await first.start()
        defer { Task { await first.stop() } }
        #expect(PostgresServer.fixturePorts.contains(first.port), "outside the ephemeral range: \(first.port)")
        let second = WebhookReceiver(port: first.port)
        await #expect(throws: (any Error).self) { try await second.start() }
    }

    @Test("with the receiver down, an alert is retried and arrives once after it comes back")
    func receiverDown() async throws {
        let receiver = WebhookReceiver()
        try await receiver.start()
        let url = receiver.url
        await receiver.stop()
        let collector = try await TestCollector.start {
            $0.alertPollInterval = .milliseconds(100)
            $0.webhookTargets = .loopbackForTests
        }
        defer { Task { await collector.stop() } }
        let webhook = try await createWebhook(
            collector, #"{"url": "\#(url)", "events": ["new-group"], "format": "slack"}"#)
        let webhookID = try #require(webhook["id"] as? Int)
        try await upload(collector, function: "shop.down() -> ()", version: "1.0")
        // Wait for a failed attempt, then bring the receiver back on the same port.
        var failed: [String: Any] = [:]
        for _ in 0..<200 {
            let items = try await HTTP.get(collector, "/api/v1/webhooks/\(webhookID)/deliveries").json["items"]
            failed = (items as? [[String: Any]])?.first ?? [:]
            if (failed["attempts"] as? Int ?? 0) >= 1 { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(failed["state"] as? String == "pending", "\(failed)")
        // One phrase for every network failure: the list cannot tell a closed port from a silent host.
        #expect(failed["lastError"] as? String == AlertDispatcher.notDelivered, "\(failed)")
        try await receiver.start()
        defer { Task { await receiver.stop() } }
        let received = try await receiver.wait(for: .seconds(60)) { !$0.isEmpty }
        try await Task.sleep(for: .seconds(1))
        #expect(receiver.all.count == 1 && received.first?.event == "new-group")
        #expect((receiver.all.first?.json["text"] as? String)?.contains("New crash group") == true)
        #expect(receiver.all.first?.signature == nil, "no secret, no signature")
    }
}

extension WebhookTargets {
    /// The tests' receivers listen on loopback, which a collector refuses by default.
    static let loopbackForTests = WebhookTargets(allowed: (try? AddressRange("127.0.0.0/8")).map { [$0] } ?? [])
}

@Suite("Alerts: webhook targets")
struct WebhookTargetTests {
    @Test("internal addresses are refused in every spelling, public ones pass, allowed ranges pass")
    func classification() async throws {
        let strict = WebhookTargets()
        for host in [
            "127.0.0.1", "0x7f000001", "2130706433", "127.1", "10.1.2.3", "172.20.0.1", "192.168.1.1",
            "169.254.169.254", "100.64.0.1", "0.0.0.0", "::1", "[::1]", "fe80::1", "fd00::1", "::ffff:127.0.0.1",
            "::ffff:169.254.169.254", "localhost",
            // The five spellings the 2026-11-27 review got past the check (finding 8), and Teredo.
            "::127.0.0.1", "::ffff:0:127.0.0.1", "64:ff9b:1::7f00:1", "2002:7f00:1::", "fec0::1", "2001:0:7f00:1::",
        ] {
            guard case .failure(.internalAddress) = await strict.check(host: host) else {
                Issue.record("\(host) was not refused")
                continue
            }
        }
        for address in ["8.8.8.8", "1.1.1.1", "2606:4700:4700::1111"] {
            guard case .success = await strict.check(host: address) else {
                Issue.record("\(address) was refused")
                continue
            }
        }
        guard case .failure(.unresolvable) = await strict.check(host: "no-such-host.invalid") else {
            Issue.record("an unresolvable host was not refused")
            return
        }
        let allowing = try WebhookTargets(allowing: "10.0.0.0/8, 127.0.0.0/8")
        guard case .success = await allowing.check(host: "10.9.9.9"),
            case .success = await allowing.check(host: "127.0.0.1")
        else {
            Issue.record("allowed ranges were refused")
            return
        }
        guard case .failure = await allowing.check(host: "192.168.0.1") else {
            Issue.record("a range not allowed passed")
            return
        }
        #expect(throws: AddressRange.Problem.self) { try WebhookTargets(allowing: "10.0.0.0/33") }
        #expect(throws: AddressRange.Problem.self) { try WebhookTargets(allowing: "not-a-range") }
    }

    @Test("a collector refuses webhooks to its own network and never sends to them")
    func refusedByDefault() async throws {
        let receiver = WebhookReceiver()
        try await receiver.start()
        defer { Task { await receiver.stop() } }
        let collector = try await TestCollector.start { $0.alertPollInterval = .milliseconds(100) }
        defer { Task { await collector.stop() } }
        for url in [
            receiver.url, "http://169.254.169.254/latest/meta-data/", "http://0x7f000001:9/", "http://[::1]:9/",
        ] {
            let created = try await HTTP.request(
                "\(collector.baseURL)/api/v1/webhooks", method: .POST,
                headers: [("Authorization", "Bearer \(collector.adminToken)")],
                body: Data(#"{"url": "\#(url)", "events": ["new-group"]}"#.utf8))
            #expect(
                created.status == 400 && created.json["error"] as? String == "invalid_webhook",
                "\(url): \(created.text)")
            #expect(created.text.contains("internal address"), "\(created.text)")
        }
        #expect((try await HTTP.get(collector, "/api/v1/webhooks").json["items"] as? [Any])?.isEmpty == true)
    }
}

@Suite("Alerts: restarts and several instances")
struct AlertDurabilityTests {
    static func createWebhook(base: String, token: String, url: String) async throws {
        let created = try await HTTP.request(
            "\(base)/api/v1/webhooks", method: .POST,
            headers: [("Authorization", "Bearer \(token)"), ("Content-Type", "application/json")],
            body: Data(#"{"url": "\#(url)", "events": ["new-group"], "secret": "k"}"#.utf8))
        #expect(created.status == 201, "\(created.text)")
    }

    static func upload(base: String, key: String, function: String) async throws -> Int {
        let report = Reports.crash(functions: [function])
        return try await HTTP.request(
            "\(base)/api/v1/bundles", method: .POST,
            headers: [("Authorization", "Bearer \(key)"), ("Upload-Id", UUID().uuidString)],
            body: try BundleArchive.make(app: report.app, host: "h", reports: [report])
        ).status
    }

    @Test("a collector SIGKILLed between an event and its delivery delivers it once after it restarts")
    func killedBeforeDelivery() async throws {
        let receiver = WebhookReceiver()
        try await receiver.start()
        let url = receiver.url
        await receiver.stop()
        let scratch = TemporaryDirectory(prefix: "alerts-kill")
        defer { scratch.remove() }
        let first = try await CollectorProcess.start(
            dataDirectory: scratch.path, arguments: ["--webhook-allow", "127.0.0.0/8"])
        try await Self.createWebhook(base: first.baseURL, token: first.adminToken, url: url)
        #expect(try await Self.upload(base: first.baseURL, key: first.ingestKey, function: "shop.kill() -> ()") == 201)
        first.kill(SIGKILL)  // the alert was queued with the upload; the receiver is down: not delivered

        try await receiver.start()
        defer { Task { await receiver.stop() } }
        let second = try await CollectorProcess.start(
            dataDirectory: scratch.path, arguments: ["--webhook-allow", "127.0.0.0/8"])
        defer { second.kill(SIGTERM) }
        // At most the claim lease (60 s) if the first instance died holding it; usually the next poll.
        _ = try await receiver.wait(for: .seconds(100)) { !$0.isEmpty }
        try await Task.sleep(for: .seconds(2))
        let received = receiver.all
        #expect(received.count == 1 && received.first?.event == "new-group", "\(received.map(\.event))")
        #expect(received.first.map { $0.signature == WebhookReceiver.expectedSignature($0.body, secret: "k") } == true)
    }

    @Test(
        "a release whose requests fail more than twice as often as the last release's is alerted once, on either store",
        arguments: ["sqlite", "postgres"])
    func releaseRegression(store: String) async throws {
        let receiver = WebhookReceiver()
        try await receiver.start()
        defer { Task { await receiver.stop() } }
        let scratch = TemporaryDirectory(prefix: "alerts-release")
        defer { scratch.remove() }
        var arguments = ["--webhook-allow", "127.0.0.0/8"]
        if store == "postgres" {
            arguments += [
                "--database-url", try await PostgresServer.makeDatabase(), "--blob-dir", scratch.path + "/blobs",
            ]
        }
        let collector = try await CollectorProcess.start(dataDirectory: scratch.path + "/data", arguments: arguments)
        defer { collector.kill(SIGTERM) }
        let created = try await HTTP.request(
            "\(collector.baseURL)/api/v1/webhooks", method: .POST,
            headers: [("Authorization", "Bearer \(collector.adminToken)"), ("Content-Type", "application/json")],
            body: Data(
                #"{"url": "\#(receiver.url)", "events": ["release-regression"], "secret": "k", "releaseRegression": {"factor": 2, "minimumRequests": 100}}"#
                    .utf8))
        #expect(created.status == 201, "\(created.text)")
        let webhookID = try #require(created.json["id"] as? Int)
        #expect((created.json["releaseRegression"] as? [String: Any])?["minimumRequests"] as? Int == 100)

        // One run's request counts, as the Hummingbird and Vapor middlewares send them.
        func send(_ version: String, _ requests: RequestCounts) async throws {
            let now = Date()
            let summary = SessionSummary(
                appVersion: version, clean: 1, firstStart: now - 120, lastEnd: now - 60, requests: requests)
            let manifest = BundleManifest(
                app: .init(name: "shop", version: version), host: "h", entries: [], sessions: [summary])
            let answer = try await HTTP.request(
                "\(collector.baseURL)/api/v1/bundles", method: .POST,
                headers: [("Authorization", "Bearer \(collector.ingestKey)"), ("Upload-Id", UUID().uuidString)],
                body: try BundleArchive.zip([("manifest.json", try manifest.encoded())]))
            #expect(answer.status == 201, "\(answer.text)\n\(collector.errors())")
        }
        try await send("1.0", RequestCounts(total: 1000, serverErrors: 10))  // 1 %: nothing before it
        try await send("1.1", RequestCounts(total: 200, serverErrors: 4))  // 2 %: not more than twice
        try await send("1.1", RequestCounts(total: 200, serverErrors: 10, crashed: 2))  // 16 of 400: 4 %
        try await send("1.1", RequestCounts(total: 200, serverErrors: 50))  // worse, but alerted already
        try await send("1.2", RequestCounts(total: 50, serverErrors: 50))  // too few requests yet

        let received = try await receiver.wait(for: .seconds(30)) { !$0.isEmpty }
        try await Task.sleep(for: .seconds(2))  // a second alert would arrive within the poll
        #expect(receiver.all.count == 1, "\(receiver.all.map { String(decoding: $0.body, as: UTF8.self) })")
        let alert = try #require(received.first)
        #expect(
            alert.event == "release-regression"
                && alert.signature == WebhookReceiver.expectedSignature(alert.body, secret: "k"))
        let release = alert.json["release"] as? [String: Any]
        let previous = alert.json["previousRelease"] as? [String: Any]
        // Built when sent: 1.1's counts as they were then (the last upload may or may not be in).
        #expect(release?["version"] as? String == "1.1" && previous?["version"] as? String == "1.0", "\(alert.json)")
        #expect(previous?["failureRate"] as? Double == 0.01)
        #expect((release?["url"] as? String)?.hasSuffix("/releases?version=1.1") == true)

        let deliveries =
            try await HTTP.request(
                "\(collector.baseURL)/api/v1/webhooks/\(webhookID)/deliveries",
                headers: [("Authorization", "Bearer \(collector.adminToken)")]
            ).json["items"] as? [[String: Any]]
        let delivery = try #require(deliveries?.first)
        #expect(deliveries?.count == 1 && delivery["groupID"] == nil && delivery["state"] as? String == "delivered")
        #expect(delivery["version"] as? String == "1.1" && delivery["previousVersion"] as? String == "1.0")
        let page = try await HTTP.request(
            "\(collector.baseURL)/alerts", headers: [("Authorization", "Bearer \(collector.adminToken)")])
        #expect(page.text.contains(#"<a href="/releases?version=1.1">release 1.1</a>"#), "\(page.text)")

        // In a browser (once): the delivery links the release's page.
        guard store == "sqlite" else { return }
        guard let chromium = WebUIBrowserTests.chromium else {
            #expect(!WebUIBrowserTests.required, "Chromium is not installed")
            return
        }
        let link = try await HTTP.request(
            "\(collector.baseURL)/api/v1/login-links", method: .POST,
            headers: [("Authorization", "Bearer \(collector.adminToken)")])
        let signIn = try #require(link.json["path"] as? String, "\(link.text)")
        let output = BrowserDriver.outputDirectory(for: "release-regression")
        let run = try await BrowserDriver.run(
            chromium,
            [
                .navigate("\(collector.baseURL)\(signIn)?next=%2Falerts"),
                .evaluate("document.querySelector('tr.delivery').textContent.includes('release-regression')"),
                .screenshot("1-alerts.png"),
                .click("tr.delivery a"),
                .evaluate("document.querySelector('h1').textContent"),
                .screenshot("2-release.png"),
            ], output: output)
        #expect(run.failed == nil && run.errors.isEmpty, "\(run.failed ?? "") \(run.errors)")
        #expect(run.values.contains { $0 as? Bool == true }, "\(run.values)")
        #expect(run.values.contains { ($0 as? String)?.contains("1.1") == true }, "\(run.values)")
        print("release regression screenshots: \(output)")
    }

    @Test("two instances on one PostgreSQL database deliver each event once")
    func twoInstances() async throws {
        let receiver = WebhookReceiver()
        try await receiver.start()
        defer { Task { await receiver.stop() } }
        let scratch = TemporaryDirectory(prefix: "alerts-pg")
        defer { scratch.remove() }
        let shared = [
            "--database-url", try await PostgresServer.makeDatabase(), "--blob-dir", scratch.path + "/blobs",
            "--webhook-allow", "127.0.0.0/8",
        ]
        let first = try await CollectorProcess.start(dataDirectory: scratch.path + "/a", arguments: shared)
        defer { first.kill(SIGTERM) }
        let second = try await CollectorProcess.start(dataDirectory: scratch.path + "/b", arguments: shared)
        defer { second.kill(SIGTERM) }
        try await Self.createWebhook(base: first.baseURL, token: first.adminToken, url: receiver.url)
        // Fewer than the 10 new-group alerts a webhook gets a minute one by one (more are digested).
        let groups = 8
        // Each group's first occurrence sent to both instances at once (two reports, one new group).
        try await withThrowingTaskGroup(of: Int.self) { uploads in
            for index in 0..<groups {
                for base in [first.baseURL, second.baseURL] {
                    uploads.addTask {
                        try await Self.upload(base: base, key: first.ingestKey, function: "shop.f\(index)() -> ()")
                    }
                }
            }
            for try await status in uploads {
                #expect(status == 201, "first: \(first.errors())\nsecond: \(second.errors())")
            }
        }
        _ = try await receiver.wait(for: .seconds(60)) { $0.count >= groups }
        try await Task.sleep(for: .seconds(3))  // both instances poll every second: duplicates would show
        let received = receiver.all
        let groupIDs = received.compactMap { ($0.json["group"] as? [String: Any])?["id"] as? Int }
        #expect(received.count == groups && Set(groupIDs).count == groups, "\(groupIDs.sorted())")
        #expect(Set(received.map(\.delivery)).count == received.count)
    }
}
