import AsyncHTTPClient
import BlackboxTestSupport
import CollectorTestSupport
import Crypto
import Foundation
import NIOCore
import Testing

@testable import BlackboxCollector

/// The S3 client against a real S3-compatible server (SeaweedFS, which checks every signature),
/// each test in a bucket of its own.
@Suite("S3 client against SeaweedFS", .timeLimit(.minutes(3)))
struct S3ClientTests {
    /// A client for a new, empty bucket (made here: Blackbox itself never creates one).
    static func client(prefix: String = "blackbox/", partBytes: Int64 = 16 << 20, on chosen: SeaweedServer? = nil)
        async throws -> S3Client
    {
        let server: SeaweedServer
        if let chosen { server = chosen } else { server = try await SeaweedServer.running() }
        let bucket = "t-" + UUID().uuidString.lowercased().prefix(18)
        let configuration = try S3Configuration(blobURL: "s3://\(bucket)/\(prefix)", environment: server.environment)
        var client = S3Client(configuration: configuration, http: .shared)
        client.partBytes = partBytes
        try await createBucket(configuration)
        return client
    }

    static func createBucket(_ configuration: S3Configuration) async throws {
        let path = configuration.encodedPath(key: nil)
        var request = HTTPClientRequest(url: configuration.url(encodedPath: path, query: []))
        request.method = .PUT
        let signer = S3Signer(credentials: configuration.credentials, region: configuration.region)
        for (name, value) in signer.sign(
            method: "PUT", encodedPath: path, query: [], headers: ["host": configuration.hostHeader],
            payloadSHA256: S3Signer.emptyPayloadHash, at: Date())
        {
            request.headers.replaceOrAdd(name: name, value: value)
        }
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(30))
        let body = try await response.body.collect(upTo: 1 << 16)
        #expect(response.status.code == 200, "\(String(buffer: body))")
    }

    /// A file of `size` bytes that differ along it (a part out of place changes the hash).
    static func file(_ directory: TemporaryDirectory, _ name: String, size: Int) throws -> (
        path: String, sha256: String
    ) {
        var generator = SplitMix64(seed: UInt64(size))
        let bytes = Data((0..<size).map { _ in UInt8.random(in: 0...255, using: &generator) })
        let path = "\(directory.path)/\(name)"
        try bytes.write(to: URL(fileURLWithPath: path))
        return (path, SHA256.hash(data: bytes).lowercaseHex)
    }

    static func sha256(ofFile path: String) throws -> String {
        SHA256.hash(data: try Data(contentsOf: URL(fileURLWithPath: path))).lowercaseHex
    }

    @Test("put, head, get and delete a blob: the bytes come back as they went")
    func roundTrip() async throws {
        let client = try await Self.client()
        let scratch = TemporaryDirectory()
        defer { scratch.remove() }
        let blob = try Self.file(scratch, "blob", size: 300_001)
        let key = "ab/\(blob.sha256).zip"
        #expect(try await client.head(key: key) == nil)
        try await client.put(key: key, fromFile: blob.path, size: 300_001, sha256: blob.sha256)
        #expect(try await client.head(key: key)?.size == 300_001)
        let copy = "\(scratch.path)/copy"
        #expect(try await client.get(key: key, toFile: copy, maxBytes: 1 << 20) == 300_001)
        #expect(try Self.sha256(ofFile: copy) == blob.sha256)
        try await client.delete(key: key)
        #expect(try await client.head(key: key) == nil)
        try await client.delete(key: key)  // gone already: not an error
        await #expect(throws: S3Error.self) {
            _ = try await client.get(key: key, toFile: "\(scratch.path)/missing", maxBytes: 1 << 20)
        }
        do {
            _ = try await client.get(key: key, toFile: "\(scratch.path)/missing", maxBytes: 1 << 20)
        } catch let error as S3Error {
            #expect(error.isMissingObject, "\(error)")
        }
        #expect(!FileManager.default.fileExists(atPath: "\(scratch.path)/missing"))
    }

    @Test("a blob over the part size goes up in parts and comes back whole")
    func multipart() async throws {
        let client = try await Self.client(partBytes: 5 << 20)
        let scratch = TemporaryDirectory()
        defer { scratch.remove() }
        let size = (11 << 20) + 3
        let blob = try Self.file(scratch, "large", size: size)
        try await client.put(key: "cd/large.zip", fromFile: blob.path, size: Int64(size))
        #expect(try await client.head(key: "cd/large.zip")?.size == Int64(size))
        let copy = "\(scratch.path)/copy"
        #expect(try await client.get(key: "cd/large.zip", toFile: copy, maxBytes: 1 << 30) == Int64(size))
        #expect(try Self.sha256(ofFile: copy) == blob.sha256)
    }

    @Test("a signature the store refuses, a file shorter than announced: errors, nothing stored")
    func refusals() async throws {
        let client = try await Self.client()
        let scratch = TemporaryDirectory()
        defer { scratch.remove() }
        let blob = try Self.file(scratch, "blob", size: 4_096)

        var wrongSecret = client.configuration
        wrongSecret.credentials.secretAccessKey = "not-the-secret"
        let impostor = S3Client(configuration: wrongSecret, http: .shared)
        do {
            try await impostor.put(key: "k1", fromFile: blob.path, size: 4_096)
            Issue.record("a put with the wrong secret was accepted")
        } catch let error as S3Error {
            #expect(error.status == 403, "\(error)")
            #expect(error.code == "SignatureDoesNotMatch", "\(error)")
        }

        // A body that does not match its signed hash: AWS refuses it (XAmzContentSHA256Mismatch);
        // SeaweedFS 4.48 stores it, so that is not tested here.

        await #expect(throws: StorageError.self) {
            try await client.put(key: "k3", fromFile: blob.path, size: 8_192, sha256: blob.sha256)
        }
        for key in ["k1", "k3"] {
            let head = try await client.head(key: key)
            #expect(head == nil, "\(key): \(String(describing: head))")
        }

        let copy = "\(scratch.path)/copy"
        try await client.put(key: "k4", fromFile: blob.path, size: 4_096)
        await #expect(throws: S3Error.self) { _ = try await client.get(key: "k4", toFile: copy, maxBytes: 4_095) }
        #expect(!FileManager.default.fileExists(atPath: copy))
    }

    @Test("listing by prefix, a page at a time, keys relative to the configured prefix")
    func listing() async throws {
        let client = try await Self.client(prefix: "deep/er")
        let scratch = TemporaryDirectory()
        defer { scratch.remove() }
        let blob = try Self.file(scratch, "blob", size: 10)
        let keys = ["ab/1.zip", "ab/2.zip", "ab/3 x.envelope", "ab/4.zip", "cd/5.zip"]
        for key in keys { try await client.put(key: key, fromFile: blob.path, size: 10) }
        var listed: [String] = []
        var continuation: String?
        var pages = 0
        repeat {
            let page = try await client.list(prefix: "ab/", continuation: continuation, maxKeys: 2)
            listed += page.objects.map(\.key)
            #expect(page.objects.allSatisfy { $0.size == 10 })
            continuation = page.continuation
            pages += 1
        } while continuation != nil && pages < 10
        #expect(listed == Array(keys.prefix(4)))
        #expect(pages >= 2)
        #expect(try await client.list(prefix: "").objects.map(\.key) == keys)
    }

    @Test("a missing bucket is a clear error at start, never created")
    func missingBucket() async throws {
        let server = try await SeaweedServer.running()
        let configuration = try S3Configuration(blobURL: "s3://never-made-bucket/x", environment: server.environment)
        let client = S3Client(configuration: configuration, http: .shared)
        do {
            try await client.checkBucket()
            Issue.record("a missing bucket passed the check")
        } catch let error as S3Error {
            #expect(error.code == "NoSuchBucket")
            #expect(error.description.contains("does not exist"), "\(error)")
        }
        let created = try await Self.client()
        try await created.checkBucket()
    }

    @Test("no answer: the endpoint refuses connections")
    func unreachable() async throws {
        let configuration = try S3Configuration(
            blobURL: "s3://blobs",
            environment: [
                "AWS_ENDPOINT_URL": "http://127.0.0.1:\(PostgresServer.freePort())", "AWS_ACCESS_KEY_ID": "a",
                "AWS_SECRET_ACCESS_KEY": "b",
            ])
        var client = S3Client(configuration: configuration, http: .shared)
        client.timeout = .seconds(2)
        do {
            try await client.checkBucket()
            Issue.record("a closed port answered")
        } catch let error as S3Error {
            #expect(error.status == nil && error.isTransient, "\(error)")
        }
    }
}
