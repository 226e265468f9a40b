import AsyncHTTPClient
import BlackboxFormat
import BlackboxTestSupport
import Foundation
import NIOCore
import NIOHTTP1
import Synchronization
import Testing

@testable import BlackboxCollector

/// A real collector on an ephemeral loopback port with a real SQLite store in a temporary directory,
/// stopped (and its directory removed) by `stop()`.
final class TestCollector: @unchecked Sendable {
    private let scratch: TemporaryDirectory
    var directory: String { scratch.path }
    let server: CollectorServer
    let baseURL: String
    var port: Int { Int(baseURL.split(separator: ":").last ?? "") ?? 0 }
    let ingestKey: String
    let adminToken: String
    private let task: Task<Void, any Error>

    static func start(configure: (inout CollectorConfiguration) -> Void = { _ in }) async throws -> TestCollector {
        let scratch = TemporaryDirectory(prefix: "collector-test")
        let directory = scratch.path
        var configuration = CollectorConfiguration(dataDirectory: directory)
        configuration.port = 0
        configuration.retentionDays = nil
        configure(&configuration)
        let server = try CollectorServer(configuration: configuration)
        let credentials = try #require(
            try await Bootstrap.ensureFirstProject(store: server.store, dataDirectory: directory).credentials)
        let (ports, portContinuation) = AsyncStream.makeStream(of: Int.self)
        let app = try await server.makeApplication { port in portContinuation.yield(port) }
        // A service that fails to start ends the stream, and start throws its error instead of waiting
        // for a port forever (as `WebhookReceiver` does).
        let task = Task {
            defer { portContinuation.finish() }
            try await app.runService(gracefulShutdownSignals: [])
        }
        var boundPort: Int?
        for await bound in ports {
            boundPort = bound
            break
        }
        guard let port = boundPort else {
            defer { scratch.remove() }
            try await task.value
            throw CancellationError()
        }
        return TestCollector(
            scratch: scratch, server: server, baseURL: "http://127.0.0.1:\(port)", ingestKey: credentials.ingestKey,
            adminToken: credentials.adminToken, task: task)
    }

    private init(
        scratch: TemporaryDirectory, server: CollectorServer, baseURL: String, ingestKey: String, adminToken: String,
        task: Task<Void, any Error>
    ) {
        self.scratch = scratch
        self.server = server
        self.baseURL = baseURL
        self.ingestKey = ingestKey
        self.adminToken = adminToken
        self.task = task
    }

    func stop() async {
        task.cancel()
        _ = await task.result
        scratch.remove()
    }
}

/// Set once, read from any task or thread.
final class Flag: Sendable {
    private let value = Atomic<Bool>(false)
    var isSet: Bool { value.load(ordering: .acquiring) }
    func set() { value.store(true, ordering: .releasing) }
}

struct HTTPResult {
    var status: Int
    var body: Data
    var headers: [String: String] = [:]
    var json: [String: Any] { ((try? JSONSerialization.jsonObject(with: body)) as? [String: Any]) ?? [:] }
    var text: String { String(decoding: body, as: UTF8.self) }
}

enum HTTP {
    static func request(
        _ url: String, method: HTTPMethod = .GET, headers: [(String, String)] = [], body: Data? = nil,
        chunked: Bool = false, client: HTTPClient = .shared
    ) async throws -> HTTPResult {
        var request = HTTPClientRequest(url: url)
        request.method = method
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        if let body {
            if chunked {
                let chunks = stride(from: 0, to: body.count, by: 64 << 10).map {
                    ByteBuffer(bytes: body[$0..<min($0 + (64 << 10), body.count)])
                }
                request.body = .stream(chunks.async, length: .unknown)
            } else {
                request.body = .bytes(ByteBuffer(bytes: body))
            }
        }
        let response = try await client.execute(request, timeout: .seconds(60))
        let bytes = try await response.body.collect(upTo: 64 << 20)
        var headerValues: [String: String] = [:]
        for header in response.headers { headerValues[header.name.lowercased()] = header.value }
        return HTTPResult(status: Int(response.status.code), body: Data(buffer: bytes), headers: headerValues)
    }

    /// Fails at once when nothing listens (the shared client keeps reconnecting until the deadline):
    /// for tests that kill a server mid-stream.
    static let failFast: HTTPClient = {
        var configuration = HTTPClient.Configuration()
        configuration.connectionPool.retryConnectionEstablishment = false
        return HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
    }()

    enum Credential {
        case ingestKey, none
        case secret(String)
    }

    static func upload(
        _ collector: TestCollector, _ body: Data, credential: Credential = .ingestKey,
        uploadID: String? = UUID().uuidString, chunked: Bool = false
    ) async throws -> HTTPResult {
        var headers = [("Content-Type", "application/zip")]
        switch credential {
        case .ingestKey: headers.append(("Authorization", "Bearer \(collector.ingestKey)"))
        case .secret(let secret): headers.append(("Authorization", "Bearer \(secret)"))
        case .none: break
        }
        if let uploadID { headers.append(("Upload-Id", uploadID)) }
        return try await request(
            "\(collector.baseURL)/api/v1/bundles", method: .POST, headers: headers, body: body, chunked: chunked)
    }

    /// Log search hits for `query`; waits up to 10 s for the background indexer to reach them.
    static func searchLogs(_ baseURL: String, token: String, query: String) async throws -> [Any] {
        for _ in 0..<100 {
            let hits =
                try await request(
                    "\(baseURL)/api/v1/logs/search?q=\(query)", headers: [("Authorization", "Bearer \(token)")]
                ).json["items"] as? [Any] ?? []
            if !hits.isEmpty { return hits }
            try await Task.sleep(for: .milliseconds(100))
        }
        return []
    }

    static func get(_ collector: TestCollector, _ path: String, token: String? = nil) async throws -> HTTPResult {
        try await request(
            collector.baseURL + path, headers: [("Authorization", "Bearer \(token ?? collector.adminToken)")])
    }
}

extension Array where Element: Sendable {
    fileprivate var async: AsyncStream<Element> {
        AsyncStream { continuation in
            for element in self { continuation.yield(element) }
            continuation.finish()
        }
    }
}

/// Realistic reports: the shape the crash processor produces, with chosen functions and addresses.
enum Reports {
    static func crash(
        functions: [String], signal: (Int32, String) = (11, "SIGSEGV"), version: String = "1.0",
        host: String = "host-a",
        baseAddress: UInt64 = 0x5555_0000_0000, message: String? = nil
    ) -> CrashReport {
        var report = CrashReport(
            kind: .crash, app: .init(name: "shop", version: version, build: "7"),
            host: .init(name: host, os: "Debian GNU/Linux 12", kernel: "Linux 6.1", architecture: "x86_64"),
            process: .init(pid: 100, path: "/srv/shop/shop", crashTime: Date()), thread: .init(id: 100, name: "main"))
        report.signal = .init(number: signal.0, name: signal.1, code: 1, codeName: nil, faultAddress: "0x0")
        report.fatalMessage = message
        report.images = [
            .init(
                path: "/srv/shop/shop", bias: hex(baseAddress), start: hex(baseAddress),
                end: hex(baseAddress + 0x100000), buildID: "ab"),
            .init(
                path: "/usr/lib/x86_64-linux-gnu/libc.so.6", bias: "0x7f0000000000", start: "0x7f0000000000",
                end: "0x7f0000200000", buildID: "cd"),
        ]
        var frames: [CrashReport.Frame] = [
            .init(
                index: 0, address: "0x7f0000001234", imageIndex: 1, imageOffset: "0x1234",
                symbols: [.init(function: "__pthread_kill_implementation")])
        ]
        for (index, function) in functions.enumerated() {
            let offset = UInt64(0x1000 * (index + 1)) + UInt64.random(in: 0..<16)
            frames.append(
                .init(
                    index: index + 1, address: hex(baseAddress + offset), imageIndex: 0, imageOffset: hex(offset),
                    symbols: [.init(function: function, file: "Sources/shop/main.swift", line: 10 + index)]))
        }
        report.frames = frames
        report.symbolicated = true
        report.frameSource = "libunwind"
        report.logTail = ["2026-11-22T00:00:00.000Z INFO  shop: about to fail"]
        return report
    }

    static func hex(_ value: UInt64) -> String { "0x" + String(value, radix: 16) }
}
