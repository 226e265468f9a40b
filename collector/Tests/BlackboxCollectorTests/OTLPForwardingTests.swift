import BlackboxCompression
import BlackboxFormat
import BlackboxOTLP
import BlackboxTestSupport
import Foundation
import Hummingbird
import Synchronization
import Testing

@testable import BlackboxCollector

/// Issue 52, item 2: the collector forwards the log lines it ingests over OTLP/HTTP to a team's
/// endpoint (here a real receiver on loopback), with retry and a bounded queue.
@Suite("OTLP forwarding: ingested log lines to an OTLP/HTTP endpoint")
struct OTLPForwardingTests {
    /// An OTLP/HTTP logs endpoint on loopback: it keeps what it is sent (gzip and protobuf undone),
    /// and answers the first `failures` requests with 503 and `Retry-After: 0`.
    final class Receiver: Sendable {
        struct Received: Sendable {
            var authorization: String?
            var request: OTLPLogsRequest
        }
        private let received = Mutex<[Received]>([])
        private let failuresLeft: Atomic<Int>
        private let answered503 = Atomic<Int>(0)
        private let task = Mutex<Task<Void, any Error>?>(nil)
        private let boundPort = Atomic<Int>(0)
        var url: String { "http://127.0.0.1:\(boundPort.load(ordering: .relaxed))/v1/logs" }
        var all: [Received] { received.withLock { $0 } }
        var refusedRequests: Int { answered503.load(ordering: .relaxed) }

        init(failures: Int = 0) { failuresLeft = Atomic(failures) }

        func start() async throws {
            let router = Router()
            router.post("v1/logs") { [self] request, _ -> Response in
                if failuresLeft.wrappingSubtract(1, ordering: .relaxed).oldValue > 0 {
                    answered503.wrappingAdd(1, ordering: .relaxed)
                    return Response(status: .serviceUnavailable, headers: [.retryAfter: "0"])
                }
                let body = try await request.body.collect(upTo: 16 << 20)
                let bytes = try GzipData.decompress(Array(buffer: body), limit: 64 << 20)
                let logs = try OTLPLogsRequest(serializedBytes: bytes)
                received.withLock {
                    $0.append(Received(authorization: request.headers[.authorization], request: logs))
                }
                return Response(
                    status: .ok, headers: [.contentType: "application/x-protobuf"],
                    body: .init(byteBuffer: ByteBuffer(bytes: try OTLPLogsResponse().serializedBytes() as [UInt8])))
            }
            let (ports, bound) = AsyncStream.makeStream(of: Int.self)
            let app = Application(
                router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)),
                onServerRunning: { channel in bound.yield(channel.localAddress?.port ?? 0) })
            task.withLock {
                $0 = Task {
                    defer { bound.finish() }
                    try await app.runService(gracefulShutdownSignals: [])
                }
            }
            for await port in ports {
                boundPort.store(port, ordering: .relaxed)
                return
            }
        }

        func stop() async {
            let running = task.withLock { $0 }
            running?.cancel()
            _ = await running?.result
        }

        /// The records received so far, with their resource's attributes and their scope's name.
        var records: [(resource: [String: String], scope: String, record: OTLPLogRecord)] {
            all.flatMap { received in
                received.request.resourceLogs.flatMap { resource in
                    let attributes = Dictionary(
                        resource.resource.attributes.map { ($0.key, OTLPLogLines.text($0.value)) },
                        uniquingKeysWith: { first, _ in first })
                    return resource.scopeLogs.flatMap { scope in
                        scope.logRecords.map { (attributes, scope.scope.name, $0) }
                    }
                }
            }
        }

        func wait(for count: Int, timeout: Duration = .seconds(30)) async throws {
            let deadline = ContinuousClock.now + timeout
            while records.count < count, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(50))
            }
        }
    }

    static let traceID = "4bf92f3577b34da6a3ce929d0e0e4736"

    /// A bundle of the app `shop` 1.2 on `web-1` with one log file of `lines`.
    static func bundle(_ lines: [String]) throws -> Data {
        let log = Data((lines.joined(separator: "\n") + "\n").utf8)
        let manifest = BundleManifest(
            app: .init(name: "shop", version: "1.2", build: nil), host: "web-1",
            entries: [
                .init(path: "logs/shop.log", kind: .log, size: Int64(log.count), sha256: BundleArchive.sha256(log))
            ])
        return try BundleArchive.zip([("manifest.json", try manifest.encoded()), ("logs/shop.log", log)])
    }

    static func collector(forwardingTo receiver: Receiver, configure: (inout OTLPForwarding) -> Void = { _ in })
        async throws -> TestCollector
    {
        var forwarding = try OTLPForwarding(endpoint: receiver.url, headers: [("Authorization", "Bearer loki-token")])
        forwarding.initialBackoff = .milliseconds(20)
        configure(&forwarding)
        return try await TestCollector.start { $0.logForwarding = forwarding }
    }

    @Test("a bundle's lines and a Sentry SDK's logs arrive as records, named by the app; OTLP's own are not sent back")
    func forwards() async throws {
        let receiver = Receiver()
        try await receiver.start()
        defer { Task { await receiver.stop() } }
        let collector = try await Self.collector(forwardingTo: receiver)
        defer { Task { await collector.stop() } }

        let lines = [
            "2026-12-01T08:00:00.120Z ERROR payments: card declined trace_id=\(Self.traceID) span_id=00f067aa0ba902b7 order=42",
            "2026-12-01T08:00:00.130Z NOTE  payments: retrying",
            "not a Blackbox line at all",
        ]
        #expect(try await HTTP.upload(collector, Self.bundle(lines)).status == 201)
        // Sentry structured logs (a `log` item), and an OTLP request, which is not forwarded.
        let item =
            #"{"items":[{"timestamp":1764576000.5,"level":"warn","body":"cache cold","trace_id":"\#(Self.traceID)"}]}"#
        let envelope = Data("{}\n{\"type\":\"log\",\"length\":\(item.utf8.count)}\n\(item)\n".utf8)
        let sentry = try await HTTP.request(
            collector.baseURL + "/api/1/envelope/", method: .POST,
            headers: [("X-Sentry-Auth", "Sentry sentry_key=\(collector.ingestKey), sentry_version=7")], body: envelope)
        #expect(sentry.status == 200, "\(sentry.text)")
        let otlp = try await HTTP.request(
            collector.baseURL + "/v1/logs", method: .POST,
            headers: [("Authorization", "Bearer \(collector.ingestKey)"), ("Content-Type", "application/json")],
            body: OTLPLogLinesTests.json())
        #expect(otlp.status == 200)
        // The collector's own indexer offers the lines (a second one run here would offer them again:
        // forwarding is at least once).
        try await receiver.wait(for: 4)

        let records = receiver.records
        #expect(records.count == 4, "\(records.map { OTLPLogLines.text($0.record.body) })")
        #expect(receiver.all.allSatisfy { $0.authorization == "Bearer loki-token" })
        let declined = try #require(records.first { OTLPLogLines.text($0.record.body) == "card declined order=42" })
        #expect(declined.scope == "payments" && declined.record.severityNumber == .error)
        #expect(
            lowercaseHex(declined.record.traceID) == Self.traceID
                && lowercaseHex(declined.record.spanID) == "00f067aa0ba902b7")
        #expect(declined.record.timeUnixNano == 1_796_112_000_120_000_000)
        #expect(declined.resource["service.name"] == "shop" && declined.resource["service.version"] == "1.2")
        #expect(declined.resource["host.name"] == "web-1" && declined.resource["log.file.path"] == "logs/shop.log")
        let note = try #require(records.first { OTLPLogLines.text($0.record.body) == "retrying" })
        #expect(note.record.severityNumber == .info2 && note.record.traceID.isEmpty)
        let other = try #require(records.first { OTLPLogLines.text($0.record.body) == "not a Blackbox line at all" })
        #expect(other.scope == "" && other.record.severityNumber == .unspecified)
        let cache = try #require(records.first { OTLPLogLines.text($0.record.body).hasPrefix("cache cold") })
        #expect(cache.record.severityNumber == .warn && lowercaseHex(cache.record.traceID) == Self.traceID)
        #expect(!records.contains { OTLPLogLines.text($0.record.body).contains("payment refused") }, "OTLP's own")

        // Counted once the forwarder has the receiver's answer, which may be after the receiver has the
        // records (a loaded fresh-clone run read 3 here): asked again for up to 10 s.
        var metrics = ""
        for _ in 0..<100 {
            metrics = try await HTTP.get(collector, "/metrics").text
            if metrics.contains(#"blackbox_logs_forwarded_total{outcome="sent"} 4"#) { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        #expect(metrics.contains(#"blackbox_logs_forwarded_total{outcome="sent"} 4"#), "\(metrics)")
    }

    @Test("an endpoint answering 503 gets the same records again, in order, once it takes them")
    func retries() async throws {
        let receiver = Receiver(failures: 3)
        try await receiver.start()
        defer { Task { await receiver.stop() } }
        let collector = try await Self.collector(forwardingTo: receiver) { $0.maxRecordsPerRequest = 10 }
        defer { Task { await collector.stop() } }
        let lines = (0..<25).map { "2026-12-01T08:00:\(String(format: "%02d", $0)).000Z INFO  shop: line \($0)" }
        #expect(try await HTTP.upload(collector, Self.bundle(lines)).status == 201)
        // The collector's own indexer offers the lines (a second one run here would offer them again:
        // forwarding is at least once).
        try await receiver.wait(for: 25)
        #expect(receiver.refusedRequests == 3)
        #expect(receiver.records.map { OTLPLogLines.text($0.record.body) } == (0..<25).map { "line \($0)" })
        #expect(receiver.all.count == 3, "requests of at most 10 records")
    }

    @Test("past the queue's bound, lines are dropped and counted, never waited for; what fits is sent")
    func boundedQueue() async throws {
        let receiver = Receiver()
        try await receiver.start()
        defer { Task { await receiver.stop() } }
        let collector = try await Self.collector(forwardingTo: receiver) { $0.maxQueuedRecords = 40 }
        defer { Task { await collector.stop() } }
        let lines = (0..<100).map { "2026-12-01T08:00:00.000Z INFO  shop: line \($0)" }
        #expect(try await HTTP.upload(collector, Self.bundle(lines)).status == 201)
        // The collector's own indexer offers the lines (a second one run here would offer them again:
        // forwarding is at least once).
        try await receiver.wait(for: 40)
        #expect(receiver.records.map { OTLPLogLines.text($0.record.body) } == (0..<40).map { "line \($0)" })
        let metrics = try await HTTP.get(collector, "/metrics").text
        #expect(metrics.contains(#"blackbox_logs_forwarded_total{outcome="dropped_queue_full"} 60"#), "\(metrics)")
        // Search has every line: forwarding never holds the indexer.
        #expect(try await OTLPIngestTests.search(collector, "line", expecting: 50).count == 50, "a page of 50")
    }

    @Test("the queue is bounded in bytes too: long lines fill it sooner")
    func boundedQueueBytes() async throws {
        let receiver = Receiver()
        try await receiver.start()
        defer { Task { await receiver.stop() } }
        let lines = (0..<100).map { "2026-12-01T08:00:00.000Z INFO  shop: line \(String(format: "%03d", $0))" }
        let collector = try await Self.collector(forwardingTo: receiver) {
            $0.maxQueuedBytes = 25 * (lines[0].utf8.count + OTLPForwarder.recordOverhead)
        }
        defer { Task { await collector.stop() } }
        #expect(try await HTTP.upload(collector, Self.bundle(lines)).status == 201)
        try await receiver.wait(for: 25)
        #expect(
            receiver.records.map { OTLPLogLines.text($0.record.body) }
                == (0..<25).map { String(format: "line %03d", $0) })
        let metrics = try await HTTP.get(collector, "/metrics").text
        #expect(metrics.contains(#"blackbox_logs_forwarded_total{outcome="dropped_queue_full"} 75"#), "\(metrics)")
    }

    @Test("headers and URLs as the options take them")
    func settings() throws {
        let headers = try OTLPForwarding.headers("Authorization=Bearer%20abc, X-Scope-OrgID=team-7")
        #expect(headers.map(\.name) == ["Authorization", "X-Scope-OrgID"])
        #expect(headers.map(\.value) == ["Bearer abc", "team-7"])
        #expect(throws: OTLPForwarding.Invalid.self) { try OTLPForwarding.headers("no-equals-sign") }
        #expect(throws: OTLPForwarding.Invalid.self) { try OTLPForwarding(endpoint: "ftp://logs/v1/logs") }
        #expect(try OTLPForwarding(endpoint: "https://loki:3100/otlp/v1/logs").endpoint.path == "/otlp/v1/logs")
    }
}
