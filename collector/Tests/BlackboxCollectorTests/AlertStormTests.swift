import BlackboxFormat
import Foundation
import Testing

@testable import BlackboxCollector

/// One upload with the public ingest key can make thousands of new groups (the security review's
/// 1,990 groups × 20 webhooks): the team gets a few alerts and a digest, and a receiver that never
/// answers holds back nobody else's alerts.
@Suite("Alerts: storms and slow receivers", .serialized)
struct AlertStormTests {
    func createWebhook(_ base: String, token: String, url: String) async throws {
        try await AlertDurabilityTests.createWebhook(base: base, token: token, url: url)
    }

    func uploadNewGroups(_ collector: TestCollector, key: String, count: Int, prefix: String) async throws {
        let reports = (0..<count).map { Reports.crash(functions: ["shop.\(prefix)\($0)() -> ()"]) }
        let upload = try await HTTP.request(
            "\(collector.baseURL)/api/v1/bundles", method: .POST,
            headers: [("Authorization", "Bearer \(key)"), ("Upload-Id", UUID().uuidString)],
            body: try BundleArchive.make(app: reports[0].app, host: "h", reports: reports))
        #expect(upload.status == 201, "\(upload.text)")
    }

    @Test("40 new groups in one upload: at most 10 alerts a window one by one, the rest in digests that count them")
    func storm() async throws {
        let receiver = WebhookReceiver()
        try await receiver.start()
        defer { Task { await receiver.stop() } }
        let collector = try await TestCollector.start {
            $0.alertPollInterval = .milliseconds(100)
            // Long enough that a loaded machine sends the first ten within it (the rule itself is
            // tested with a clock of its own below).
            $0.alertDigestWindow = .seconds(10)
            $0.webhookTargets = .loopbackForTests
        }
        defer { Task { await collector.stop() } }
        try await createWebhook(collector.baseURL, token: collector.adminToken, url: receiver.url)
        try await uploadNewGroups(collector, key: collector.ingestKey, count: 40, prefix: "storm")
        // Every group is told once: alone, or counted in a digest (windows may roll over on a loaded
        // machine, each with its own 10).
        func accounted(_ received: [WebhookReceiver.Received]) -> Int {
            received.filter { $0.event == "new-group" }.count
                + received.filter { $0.event == "new-group-digest" }.compactMap { $0.json["count"] as? Int }.reduce(
                    0, +)
        }
        let received = try await receiver.wait(for: .seconds(60)) { accounted($0) >= 40 }
        let single = received.filter { $0.event == "new-group" }
        let digests = received.filter { $0.event == "new-group-digest" }
        #expect(accounted(received) == 40, "\(received.map(\.event))")
        // The cap per window is checked by the clock in `digestRule`: here a window that rolled over
        // before anything was folded (sends slowed by load) sends its ten with no digest of its own.
        #expect(!digests.isEmpty)
        #expect(single.count < 40, "a storm is not sent one by one")
        #expect(
            digests.allSatisfy {
                ($0.json["groups"] as? [Any])?.count == min($0.json["count"] as? Int ?? 0, NewGroupDigest.namedInDigest)
            })
        // Every queued delivery is accounted for: sent, or folded into a digest.
        let webhooks = try await HTTP.get(collector, "/api/v1/webhooks").json["items"] as? [[String: Any]]
        let id = try #require(webhooks?.first?["id"] as? Int)
        let deliveries = try await HTTP.get(collector, "/api/v1/webhooks/\(id)/deliveries?limit=100").json["items"]
        let items = try #require(deliveries as? [[String: Any]])
        #expect(items.count == 40 && items.allSatisfy { $0["state"] as? String == "delivered" })
        #expect(
            items.filter { $0["lastError"] as? String == AlertDispatcher.foldedIntoDigest }.count == 40 - single.count)
    }

    @Test("the digest rule, by the clock: ten a window one by one, the rest folded, one digest per window that folded")
    func digestRule() {
        var digest = NewGroupDigest(window: 60)
        let webhook = Webhook(
            id: 1, projectID: 1, url: "https://example.com/hook", events: [.newGroup], format: .json, threshold: nil,
            createdAt: Date(timeIntervalSince1970: 0), secret: nil)
        let start = Date(timeIntervalSince1970: 1_800_000_000)
        var sent = 0
        for index in 0..<40 {
            if digest.admits(webhook, at: start + Double(index)) {
                sent += 1
            } else {
                digest.fold(webhook, groupID: Int64(index), title: "g\(index)")
            }
        }
        #expect(sent == NewGroupDigest.perMinute)
        #expect(digest.due(at: start + 59).isEmpty, "not before the window is over")
        let due = digest.due(at: start + 61)
        #expect(due.count == 1 && due.first?.count == 30 && due.first?.groups.count == NewGroupDigest.namedInDigest)
        #expect(digest.due(at: start + 62).isEmpty, "sent once")
        // A new window: ten more one by one.
        #expect(
            (0..<12).filter { digest.admits(webhook, at: start + 70 + Double($0)) }.count == NewGroupDigest.perMinute)
    }

    @Test("a project whose receivers never answer holds back no other project's alert")
    func slowReceiverIsolated() async throws {
        // Accepts connections and never answers: every send to it waits for its 10 s timeout.
        let silent = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(silent) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        #expect(
            withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(silent, $0, length) }
            } == 0)
        #expect(listen(silent, 128) == 0)
        #expect(
            withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(silent, $0, &length) }
            } == 0)
        let silentURL = "http://127.0.0.1:\(UInt16(bigEndian: address.sin_port))/hook"

        let receiver = WebhookReceiver()
        try await receiver.start()
        defer { Task { await receiver.stop() } }
        let collector = try await TestCollector.start {
            $0.alertPollInterval = .milliseconds(100)
            $0.webhookTargets = .loopbackForTests
        }
        defer { Task { await collector.stop() } }
        // Project 1: eight webhooks to the silent receiver, ten new groups each (80 slow sends).
        for _ in 0..<8 { try await createWebhook(collector.baseURL, token: collector.adminToken, url: silentURL) }
        try await uploadNewGroups(collector, key: collector.ingestKey, count: 10, prefix: "slow")
        try await Task.sleep(for: .milliseconds(500))  // the storm is in flight
        // Project 2, with one fast receiver.
        let store = collector.server.store
        let other = try await store.createProject(name: "other")
        let otherIngest = Bootstrap.newSecret("bbx_ingest_")
        let otherAdmin = Bootstrap.newSecret("bbx_admin_")
        _ = try await store.createKey(projectID: other.id, kind: .ingest, secret: otherIngest)
        _ = try await store.createKey(projectID: other.id, kind: .admin, secret: otherAdmin)
        try await createWebhook(collector.baseURL, token: otherAdmin, url: receiver.url)
        let started = ContinuousClock.now
        try await uploadNewGroups(collector, key: otherIngest, count: 1, prefix: "fast")
        let received = try await receiver.wait(for: .seconds(30)) { !$0.isEmpty }
        let waited = ContinuousClock.now - started
        #expect(received.count == 1)
        // Before: the 16 slots all went to the silent receiver's 80 sends, 10 s each (40 s and more).
        #expect(waited < .seconds(8), "project 2's alert waited \(waited)")
    }
}
