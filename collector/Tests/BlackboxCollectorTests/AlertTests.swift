import BlackboxFormat
import BlackboxTestSupport
import CollectorTestSupport
import Foundation
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
        for (body, fragment) in [
            (#"{"url": "ftp://x/", "events": ["new-group"]}"#, "http or https"),
            (#"{"url": "https://u:p@x/", "events": ["new-group"]}"#, "without credentials"),
            (#"{"url": "https://x/", "events": []}"#, "at least one"),
            (#"{"url": "https://x/", "events": ["everything"]}"#, "not everything"),
            (#"{"url": "https://x/", "events": ["new-group"], "format": "xml"}"#, "json or slack"),
            (#"{"url": "https://x/", "events": ["threshold"], "threshold": {"count": 0, "minutes": 5}}"#, "count of 1"),
            (#"{"url": "https://x/", "events": ["new-group"], "secret": ""}"#, "1 to 256"),
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
            event: .regression, delivery: delivery, group: group, latestReport: report, baseURL: "https://c.example")
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
