import BlackboxFormat
import BlackboxTestSupport
import CollectorTestSupport
import Foundation
import Testing

@testable import BlackboxCollector

/// Issue 51: collector processes with no disk in common, on one PostgreSQL database and one bucket
/// of a real S3-compatible server (SeaweedFS).
@Suite("Scale-out on a bucket: no shared disk", .timeLimit(.minutes(5)))
struct ScaleOutBucketTests {
    @Test("bundles uploaded to either instance are in the bucket and read back, byte for byte, through the other")
    func twoInstancesOneBucket() async throws {
        let seaweed = try await SeaweedServer.running()
        let scratch = TemporaryDirectory()
        defer { scratch.remove() }
        let bucket = try await S3ClientTests.client(prefix: "shop-prod")
        let arguments = [
            "--database-url", try await PostgresServer.makeDatabase(), "--blob-url",
            "s3://\(bucket.configuration.bucket)/shop-prod",
        ]
        let first = try await CollectorProcess.start(
            dataDirectory: scratch.path + "/a", arguments: arguments, environment: seaweed.environment)
        defer { first.kill(SIGTERM) }
        let second = try await CollectorProcess.start(
            dataDirectory: scratch.path + "/b", arguments: arguments, environment: seaweed.environment)
        defer { second.kill(SIGTERM) }
        try #require(!first.baseURL.isEmpty && !second.baseURL.isEmpty, "\(first.errors())\n\(second.errors())")
        let key = first.ingestKey

        var logs: [String: Data] = [:]
        for index in 0..<8 {
            let report = Reports.crash(functions: ["shop.Cart.total() -> Swift.Int"], host: "web-\(index)")
            let log = Data("2026-11-29T01:00:00.000Z ERROR shop: checkout \(index) \(UUID())\n".utf8)
            let body = try BundleArchive.make(app: report.app, host: "h", reports: [report], logs: [("shop.log", log)])
            let instance = index % 2 == 0 ? first : second
            let answer = try await HTTP.request(
                "\(instance.baseURL)/api/v1/bundles", method: .POST,
                headers: [("Authorization", "Bearer \(key)"), ("Upload-Id", UUID().uuidString.lowercased())],
                body: body)
            #expect(answer.status == 201, "\(answer.text) \(instance.errors())")
            logs[BundleArchive.sha256(body)] = log
        }

        // Every bundle is an object in the bucket, and nothing is left in either spool.
        let objects = try await bucket.list(prefix: "blobs/").objects.map(\.key)
        #expect(objects.count == 8, "\(objects)")
        #expect(Set(objects.map { String($0.split(separator: "/").last?.prefix(64) ?? "") }) == Set(logs.keys))
        for instance in ["a", "b"] {
            #expect(try FileManager.default.contentsOfDirectory(atPath: "\(scratch.path)/\(instance)/tmp").isEmpty)
        }

        // The logs are indexed (read from the bucket) and found through either instance.
        let hits = try await HTTP.searchLogs(second.baseURL, token: first.adminToken, query: "checkout")
        #expect(!hits.isEmpty)

        // Each log read back through the instance that did not receive it (and so never had the file).
        let admin = [("Authorization", "Bearer \(first.adminToken)")]
        let bundles = try #require(
            try await HTTP.request("\(second.baseURL)/api/v1/bundles?limit=50", headers: admin).json["items"]
                as? [[String: Any]])
        #expect(bundles.count == 8)
        for bundle in bundles {
            let id = try #require(bundle["id"] as? Int)
            let sha256 = try #require(bundle["sha256"] as? String)
            let reader = id % 2 == 0 ? first : second
            let files = try await HTTP.request("\(reader.baseURL)/api/v1/bundles/\(id)/files", headers: admin)
            let items = (try? JSONSerialization.jsonObject(with: files.body) as? [[String: Any]]) ?? []
            let logFile = try #require(items.first { ($0["path"] as? String)?.hasSuffix("shop.log") == true })
            let fileID = try #require(logFile["id"] as? Int)
            let content = try await HTTP.request("\(reader.baseURL)/api/v1/files/\(fileID)/content", headers: admin)
            #expect(content.status == 200 && content.body == logs[sha256], "\(content.text) \(reader.errors())")
        }
    }

    @Test(
        "the store stopped mid-run: uploads answer 503 with Retry-After, /ready says why, nothing acknowledged is lost; started again, all resumes"
    )
    func storeStoppedAndStarted() async throws {
        let store = try await SeaweedServer.startPrivate()
        defer { store.remove() }
        let bucket = try await S3ClientTests.client(prefix: "p", on: store)
        let collector = try await TestCollector.start { configuration in
            configuration.blobURL = "s3://\(bucket.configuration.bucket)/p"
            configuration.awsEnvironment = store.environment
        }
        defer { Task { await collector.stop() } }
        func bundle(_ index: Int) throws -> Data {
            try BundleArchive.make(
                app: .init(name: "shop"), host: "h", logs: [("shop.log", Data("line \(index) \(UUID())\n".utf8))])
        }
        let before = try (0..<3).map(bundle)
        for body in before { #expect(try await HTTP.upload(collector, body).status == 201) }

        store.stop()
        let started = ContinuousClock.now
        var ready = try await HTTP.request(collector.baseURL + "/ready")
        for _ in 0..<20 where ready.status == 200 {
            try await Task.sleep(for: .milliseconds(200))
            ready = try await HTTP.request(collector.baseURL + "/ready")
        }
        #expect(ready.status == 503 && ready.text.contains("blob_store_unavailable"), "\(ready.text)")
        let refusedID = UUID().uuidString.lowercased()
        let refusedBody = try bundle(3)
        let refused = try await HTTP.upload(collector, refusedBody, uploadID: refusedID)
        #expect(refused.status == 503 && refused.headers["retry-after"] == "30", "\(refused.text)")
        #expect(refused.text.contains("blob_store_unavailable"), "\(refused.text)")
        #expect(ContinuousClock.now - started < .seconds(20), "refusals came at once, not after a timeout")
        let listed = try await HTTP.get(collector, "/api/v1/bundles").json["items"] as? [[String: Any]] ?? []
        #expect(listed.count == 3, "the refused upload was not stored")

        try store.start()
        try await Task.sleep(for: BucketHealth.interval)
        #expect(try await HTTP.request(collector.baseURL + "/ready").status == 200)
        #expect(try await HTTP.upload(collector, refusedBody, uploadID: refusedID).status == 201, "resent, stored")
        let objects = try await bucket.list(prefix: "blobs/").objects
        #expect(objects.count == 4)
        for body in before + [refusedBody] {
            #expect(objects.contains { $0.key.contains(BundleArchive.sha256(body)) })
        }
    }

    @Test("retention deletes the objects of expired bundles and keeps one another project's bundle still references")
    func retentionOnTheBucket() async throws {
        let seaweed = try await SeaweedServer.running()
        let bucket = try await S3ClientTests.client(prefix: "r")
        let collector = try await TestCollector.start { configuration in
            configuration.blobURL = "s3://\(bucket.configuration.bucket)/r"
            configuration.awsEnvironment = seaweed.environment
        }
        defer { Task { await collector.stop() } }
        func bundle(_ text: String) throws -> Data {
            try BundleArchive.make(app: .init(name: "shop"), host: "h", logs: [("shop.log", Data(text.utf8))])
        }
        let shared = try bundle("sent by two projects \(UUID())\n")
        let alone = try bundle("sent once \(UUID())\n")
        #expect(try await HTTP.upload(collector, shared).status == 201)
        #expect(try await HTTP.upload(collector, alone).status == 201)
        try await Task.sleep(for: .milliseconds(1_100))
        let cutoff = Date()
        // A second project sends the same bytes after the cutoff: its bundle references the same object.
        let other = try await collector.server.store.createProject(name: "other")
        let otherKey = Bootstrap.newSecret("bbx_ingest_")
        _ = try await collector.server.store.createKey(projectID: other.id, kind: .ingest, secret: otherKey)
        #expect(try await HTTP.upload(collector, shared, credential: .secret(otherKey)).status == 201)
        #expect(try await bucket.list(prefix: "blobs/").objects.count == 2)

        let retention = RetentionService(
            store: collector.server.store, blobs: collector.server.blobs, committer: collector.server.committer,
            days: 1, bytesPerProject: .max, interval: .seconds(3600))
        // A day after the cutoff: the first project's two bundles are past a one-day retention.
        let deleted = await retention.runOnce(now: cutoff.addingTimeInterval(86_400))
        #expect(deleted == 2)
        let left = try await bucket.list(prefix: "blobs/").objects.map(\.key)
        #expect(left.count == 1 && left[0].contains(BundleArchive.sha256(shared)), "\(left)")
        #expect(try await bucket.list(prefix: "").objects.count == 1, "no aside key is left")
    }

    @Test("credentials the store refuses stop the collector at start, saying which variables to check")
    func refusedCredentials() async throws {
        let seaweed = try await SeaweedServer.running()
        let bucket = try await S3ClientTests.client(prefix: "x")
        let scratch = TemporaryDirectory()
        defer { scratch.remove() }
        var environment = seaweed.environment
        environment["AWS_SECRET_ACCESS_KEY"] = "not-the-secret"
        let collector = try await CollectorProcess.start(
            dataDirectory: scratch.path + "/a", arguments: ["--blob-url", "s3://\(bucket.configuration.bucket)/x"],
            environment: environment)
        defer { collector.kill(SIGTERM) }
        try await Self.expectRefusedStart(collector)
        #expect(collector.errors().contains("AWS_SECRET_ACCESS_KEY"), "\(collector.errors())")
    }

    /// The collector printed no address and exits on its own (within 30 s).
    static func expectRefusedStart(_ collector: CollectorProcess) async throws {
        #expect(collector.baseURL.isEmpty)
        let deadline = ContinuousClock.now + .seconds(30)
        while !collector.hasExited && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(50)) }
        #expect(collector.hasExited)
    }

    @Test("a bucket that does not exist stops the collector at start, saying so")
    func missingBucket() async throws {
        let seaweed = try await SeaweedServer.running()
        let scratch = TemporaryDirectory()
        defer { scratch.remove() }
        let collector = try await CollectorProcess.start(
            dataDirectory: scratch.path + "/a", arguments: ["--blob-url", "s3://no-such-bucket-here/x"],
            environment: seaweed.environment)
        defer { collector.kill(SIGTERM) }
        try await Self.expectRefusedStart(collector)
        #expect(collector.errors().contains("no-such-bucket-here does not exist"), "\(collector.errors())")
    }
}
