import BlackboxFormat
import BlackboxTestSupport
import CollectorTestSupport
import Foundation
import Synchronization
import Testing

@testable import BlackboxCollector

/// Two collector processes on one PostgreSQL database and one shared blob directory or one bucket,
/// behind nginx (Debian's package) as the load balancer.
@Suite("Scale-out: two collectors behind nginx")
struct ScaleOutTests {
    /// Upload ids the collectors acknowledged, and how often.
    final class Acknowledgements: Sendable {
        let ids = Mutex<[String: Int]>([:])

        func send(_ upload: Upload, to base: String, key: String) async -> Bool {
            let result = try? await HTTP.request(
                "\(base)/api/v1/bundles", method: .POST,
                headers: [("Authorization", "Bearer \(key)"), ("Upload-Id", upload.id)], body: upload.body,
                client: HTTP.failFast)
            guard let result, (200..<300).contains(result.status) else { return false }
            ids.withLock { $0[upload.id, default: 0] += 1 }
            return true
        }
    }

    struct Upload: Sendable {
        var id: String
        var body: Data
        var signature: Int
    }

    /// Where the two instances keep their blobs: one directory both mount, or (issue 51) a bucket of a
    /// real S3-compatible server, with no disk in common.
    enum Blobs: String, CaseIterable, Sendable {
        case sharedDirectory = "a shared directory"
        case bucket = "a bucket"
    }

    @Test(
        "concurrent uploads and duplicates through nginx and straight to both; one instance SIGKILLed: every acknowledged upload is stored once, group counts are right",
        arguments: Blobs.allCases)
    func twoInstances(blobs: Blobs) async throws {
        guard FileManager.default.fileExists(atPath: "/usr/sbin/nginx") else {
            Issue.record("nginx is not installed (make test-deps installs it)")
            return
        }
        let scratch = TemporaryDirectory()
        defer { scratch.remove() }
        let database = try await PostgresServer.makeDatabase()
        let bucket = blobs == .bucket ? try await S3ClientTests.client(prefix: "prod") : nil
        let seaweed = blobs == .bucket ? try await SeaweedServer.running() : nil
        let shared =
            ["--database-url", database]
            + (bucket.map { ["--blob-url", "s3://\($0.configuration.bucket)/prod"] } ?? [
                "--blob-dir", scratch.path + "/blobs",
            ])
        let environment = seaweed?.environment ?? [:]
        let first = try await CollectorProcess.start(
            dataDirectory: scratch.path + "/a", arguments: shared, environment: environment)
        defer { first.kill(SIGTERM) }
        let second = try await CollectorProcess.start(
            dataDirectory: scratch.path + "/b", arguments: shared, environment: environment)
        let ports = [first.baseURL, second.baseURL].compactMap { URL(string: $0)?.port }
        let nginx = try LocalNginx(directory: scratch.path + "/nginx", upstreams: ports)
        defer { nginx.stop() }
        let balancer = "http://127.0.0.1:\(nginx.port)"
        let key = first.ingestKey

        let functions = ["shop.Cart.total() -> Swift.Int", "shop.Payment.charge() -> ()", "shop.Search.run() -> ()"]
        let uploads = try (0..<60).map { index in
            let report = Reports.crash(functions: [functions[index % 3]], host: "host-\(index % 4)")
            let log = Data("2026-11-22T00:00:00.000Z INFO  shop: upload \(index) \(UUID())\n".utf8)
            let body = try BundleArchive.make(app: report.app, host: "h", reports: [report], logs: [("shop.log", log)])
            return Upload(id: UUID().uuidString.lowercased(), body: body, signature: index % 3)
        }
        let acknowledged = Acknowledgements()
        let (firstURL, secondURL) = (first.baseURL, second.baseURL)

        try await withThrowingTaskGroup(of: Void.self) { group in
            for (index, upload) in uploads.enumerated() {
                if index == 25 {
                    try await group.next()  // let some finish, then kill one instance mid-stream
                    second.kill(SIGKILL)
                }
                group.addTask {
                    // Like the uploader: resend until acknowledged.
                    var sent = false
                    for _ in 0..<20 where !sent {
                        sent = await acknowledged.send(upload, to: balancer, key: key)
                        if !sent { try await Task.sleep(for: .milliseconds(200)) }
                    }
                    // Duplicates: the same Upload-Id straight to both instances at once while both run.
                    if index % 3 == 0 {
                        async let viaFirst = acknowledged.send(upload, to: firstURL, key: key)
                        async let viaSecond = index < 25 ? acknowledged.send(upload, to: secondURL, key: key) : false
                        _ = await (viaFirst, viaSecond)
                    }
                }
                if index % 8 == 7 { try await group.next() }
            }
            try await group.waitForAll()
        }

        let acked = acknowledged.ids.withLock { $0 }
        #expect(acked.count == uploads.count, "every upload was acknowledged at least once")
        let admin = [("Authorization", "Bearer \(first.adminToken)")]
        let bundles = try #require(
            try await HTTP.request("\(first.baseURL)/api/v1/bundles?limit=500", headers: admin).json["items"]
                as? [[String: Any]])
        let stored = bundles.compactMap { $0["uploadID"] as? String }
        #expect(stored.count == uploads.count, "stored exactly once each")
        #expect(Set(stored) == Set(uploads.map(\.id)))
        let groups = try #require(
            try await HTTP.request("\(first.baseURL)/api/v1/groups", headers: admin).json["items"] as? [[String: Any]])
        #expect(groups.count == 3)
        #expect(groups.compactMap { $0["count"] as? Int }.sorted() == [20, 20, 20])
        if let bucket {
            let objects = try await bucket.list(prefix: "blobs/").objects.map(\.key)
            #expect(objects.filter { $0.hasSuffix(".zip") }.count == uploads.count, "one object per bundle: \(objects)")
        } else {
            let files = (try? FileManager.default.subpathsOfDirectory(atPath: scratch.path + "/blobs")) ?? []
            #expect(
                files.filter { $0.hasSuffix(".zip") }.count == uploads.count,
                "one blob per bundle in the shared directory")
        }
    }

    @Test("instances started at the same moment on an empty database all come up; exactly one prints the keys")
    func simultaneousFirstStart() async throws {
        let scratch = TemporaryDirectory()
        defer { scratch.remove() }
        let arguments = ["--database-url", try await PostgresServer.makeDatabase()]
        let instances = try await withThrowingTaskGroup(of: CollectorProcess.self) { group in
            for name in ["a", "b", "c"] {
                group.addTask {
                    try await CollectorProcess.start(dataDirectory: scratch.path + "/" + name, arguments: arguments)
                }
            }
            var started: [CollectorProcess] = []
            for try await instance in group { started.append(instance) }
            return started
        }
        defer { for instance in instances { instance.kill(SIGTERM) } }
        #expect(instances.allSatisfy { !$0.hasExited && !$0.baseURL.isEmpty })
        #expect(instances.filter { !$0.ingestKey.isEmpty }.count == 1)
        let keyed = try #require(instances.first { !$0.ingestKey.isEmpty })
        let projects = try await HTTP.request(
            "\(instances[0].baseURL)/api/v1/key", headers: [("Authorization", "Bearer \(keyed.ingestKey)")])
        #expect(projects.status == 200, "every instance accepts the key the winner printed")
    }
}
