import BlackboxCompression
import BlackboxFormat
import BlackboxOTLP
import BlackboxTestSupport
import Foundation
import Testing

@testable import BlackboxCollector

/// Issue 52, item 1: the collector receives OTLP/HTTP logs. OpenTelemetry's Python SDK and its
/// OTLP/HTTP exporter (PyPI, pinned) send to a collector on loopback; the records are read back
/// through log search and the trace page.
@Suite("OTLP logs: the real opentelemetry-sdk exporter and hand-made requests against the collector")
struct OTLPIngestTests {
    /// Arguments: the endpoint, the ingest key, a tag that marks this run's records. Logs through
    /// Python's `logging` (as apps do) inside a span, so records carry the trace context; prints the
    /// span's ids and what each export returned.
    static let otelClient = #"""
        import logging, sys
        from opentelemetry import trace
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk._logs import LoggerProvider, LoggingHandler
        from opentelemetry.sdk._logs.export import BatchLogRecordProcessor
        from opentelemetry.exporter.otlp.proto.http import Compression
        from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
        endpoint, key, tag = sys.argv[1:4]

        class Checked(OTLPLogExporter):
            def export(self, batch):
                result = super().export(batch)
                print("export", result.name, len(batch), flush=True)
                return result

        resource = Resource.create({"service.name": "checkout", "service.version": "2.3.1"})
        trace.set_tracer_provider(TracerProvider(resource=resource))
        provider = LoggerProvider(resource=resource)
        exporter = Checked(endpoint=endpoint, headers={"Authorization": "Bearer " + key},
                           compression=Compression.Gzip)
        provider.add_log_record_processor(BatchLogRecordProcessor(exporter))
        log = logging.getLogger("payments")
        log.addHandler(LoggingHandler(level=logging.DEBUG, logger_provider=provider))
        log.setLevel(logging.DEBUG)
        log.propagate = False
        with trace.get_tracer("test").start_as_current_span("charge") as span:
            log.error("payment refused for %s", tag, extra={"order": 42})
            context = span.get_span_context()
            print("ids", format(context.trace_id, "032x"), format(context.span_id, "016x"), flush=True)
        log.warning("retrying %s", tag)
        provider.force_flush(15000)
        provider.shutdown()
        """#

    /// Log search for `query`, indexing first, asked again for up to 30 s (the exporter's batch may
    /// still be on its way).
    static func search(_ collector: TestCollector, _ query: String, expecting count: Int = 1) async throws -> [String] {
        var text: [String] = []
        let deadline = ContinuousClock.now + .seconds(30)
        while ContinuousClock.now < deadline {
            await collector.server.indexPendingLogs()
            let hits =
                try await HTTP.get(collector, "/api/v1/logs/search?q=\(query)").json["items"] as? [[String: Any]] ?? []
            text = hits.compactMap { $0["text"] as? String }
            if text.count >= count { break }
            try await Task.sleep(for: .milliseconds(250))
        }
        return text
    }

    @Test("opentelemetry-sdk's exporter (protobuf, gzip, a Bearer key): records searchable, on their trace's page")
    func realSDK() async throws {
        let collector = try await TestCollector.start()
        defer { Task { await collector.stop() } }
        let result = try await PythonPeers.run(
            Self.otelClient, [collector.baseURL + "/v1/logs", collector.ingestKey, "order-7781"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("export SUCCESS 2"), "\(result.stdout)\n\(result.stderr)")
        let ids = try #require(result.stdout.split(separator: "\n").first { $0.hasPrefix("ids ") }, "\(result.stdout)")
            .split(separator: " ").dropFirst().map(String.init)
        try #require(ids.count == 2)
        let (traceID, spanID) = (ids[0], ids[1])

        let lines = try await Self.search(collector, "order-7781", expecting: 2)
        let refused = try #require(lines.first { $0.contains("payment refused") }, "\(lines)")
        #expect(
            refused.contains(" ERROR payments: payment refused for order-7781 trace_id=\(traceID) span_id=\(spanID)"),
            "\(refused)")
        #expect(refused.contains("service.name=checkout") && refused.contains("service.version=2.3.1"), "\(refused)")
        #expect(refused.contains(" order=42"), "the record's own attribute: \(refused)")
        let retry = try #require(lines.first { $0.contains("retrying") }, "\(lines)")
        #expect(retry.contains(" WARN  payments: retrying order-7781") && !retry.contains("trace_id="), "\(retry)")
        // Searchable by service and trace id too, and on the trace's page.
        #expect(try await Self.search(collector, "checkout").count == 2)
        #expect(try await Self.search(collector, traceID).count == 1)
        let page = try await HTTP.get(collector, "/traces/\(traceID)")
        #expect(
            page.status == 200 && page.text.contains("payment refused for order-7781"), "\(page.text.prefix(2_000))")

        // One bundle holds the request, its log file downloadable as text.
        let bundles = try await HTTP.get(collector, "/api/v1/bundles").json["items"] as? [[String: Any]] ?? []
        #expect(bundles.count == 1, "\(bundles)")
    }

    /// A request as OTLP's JSON writes it (ids in hex), with one record of each refusal.
    static func jsonRequest(tag: String, badRecords: Bool) -> Data {
        let bad =
            badRecords
            ? #",{"body":{"stringValue":"short trace \#(tag)"},"traceId":"0102"}"#
                + #",{"body":{"stringValue":"short span \#(tag)"},"spanId":"01"}"# : ""
        return OTLPLogLinesTests.json(extra: #",{"body":{"stringValue":"second \#(tag)"},"severityNumber":9}"# + bad)
    }

    func post(
        _ collector: TestCollector, _ path: String = "/v1/logs", body: Data, contentType: String = "application/json",
        headers: [(String, String)]? = nil, gzip: Bool = false
    ) async throws -> HTTPResult {
        var all = headers ?? [("Authorization", "Bearer \(collector.ingestKey)")]
        all.append(("Content-Type", contentType))
        var payload = body
        if gzip {
            payload = Data(try GzipData.compress(Array(body)))
            all.append(("Content-Encoding", "gzip"))
        }
        return try await HTTP.request(collector.baseURL + path, method: .POST, headers: all, body: payload)
    }

    @Test("JSON (ids in hex) gzipped; partialSuccess names the refused records; nothing accepted stores nothing")
    func jsonAndPartialSuccess() async throws {
        let collector = try await TestCollector.start()
        defer { Task { await collector.stop() } }
        let answer = try await post(collector, body: Self.jsonRequest(tag: "json-1", badRecords: true), gzip: true)
        #expect(answer.status == 200 && answer.headers["content-type"] == "application/json", "\(answer.text)")
        let response = try OTLPLogsResponse(jsonUTF8Data: answer.body)
        #expect(response.partialSuccess.rejectedLogRecords == 2, "\(answer.text)")
        #expect(response.partialSuccess.errorMessage.contains("trace_id that is not 16 bytes"), "\(answer.text)")
        let lines = try await Self.search(collector, "json-1")
        #expect(lines.count == 1 && lines[0].contains("INFO  payments: second json-1"), "\(lines)")
        #expect(try await Self.search(collector, OTLPLogLinesTests.traceHex).count == 1)

        // The same request in protobuf: a full success answers the empty message, in protobuf.
        let request = try OTLPLogsRequest(otlp: Self.jsonRequest(tag: "proto-1", badRecords: false), encoding: .json)
        let proto = try await post(collector, body: request.encoded(.protobuf), contentType: "application/x-protobuf")
        #expect(proto.status == 200 && proto.headers["content-type"] == "application/x-protobuf")
        #expect(try OTLPLogsResponse(serializedBytes: proto.body) == OTLPLogsResponse())

        // Every record refused: answered, nothing stored.
        let before = try await HTTP.get(collector, "/api/v1/bundles").json["items"] as? [Any] ?? []
        var empty = OTLPLogRecord()
        empty.traceID = Data([1, 2, 3])
        var scope = Opentelemetry_Proto_Logs_V1_ScopeLogs()
        scope.logRecords = [empty]
        var resource = Opentelemetry_Proto_Logs_V1_ResourceLogs()
        resource.scopeLogs = [scope]
        var allBad = OTLPLogsRequest()
        allBad.resourceLogs = [resource]
        let refused = try await post(collector, body: allBad.encoded(.protobuf), contentType: "application/x-protobuf")
        #expect(refused.status == 200)
        #expect(try OTLPLogsResponse(serializedBytes: refused.body).partialSuccess.rejectedLogRecords == 1)
        let after = try await HTTP.get(collector, "/api/v1/bundles").json["items"] as? [Any] ?? []
        #expect(before.count == 2 && after.count == 2, "\(after)")
    }

    @Test(
        "refusals: no key, a wrong key, another project, a wrong type, too large, not OTLP; Sentry's route by DSN key")
    func refusals() async throws {
        let collector = try await TestCollector.start()
        defer { Task { await collector.stop() } }
        let body = Self.jsonRequest(tag: "auth-1", badRecords: false)
        func status(_ answer: HTTPResult) -> OTLPStatus? {
            answer.headers["content-type"] == "application/json"
                ? try? OTLPStatus(jsonUTF8Data: answer.body) : try? OTLPStatus(serializedBytes: answer.body)
        }
        let noKey = try await post(collector, body: body, headers: [])
        #expect(noKey.status == 401 && status(noKey)?.message.hasPrefix("missing_key") == true, "\(noKey.text)")
        let wrongKey = try await post(collector, body: body, headers: [("Authorization", "Bearer bbx_ingest_nope")])
        #expect(wrongKey.status == 401 && status(wrongKey)?.code == 401)
        let wrongType = try await post(collector, body: body, contentType: "text/plain")
        #expect(wrongType.status == 415 && status(wrongType)?.message.contains("application/x-protobuf") == true)
        let notOTLP = try await post(collector, body: Data("[1,2]".utf8))
        #expect(notOTLP.status == 400 && status(notOTLP)?.message.hasPrefix("invalid_otlp") == true, "\(notOTLP.text)")
        // Decoded past the format's bound, and a bomb (each refused as it arrives, nothing parsed).
        let tooLarge = try await post(
            collector, body: Data((0..<((8 << 20) + 1)).map { UInt8(truncatingIfNeeded: $0 &* 2_654_435_761 >> 13) }),
            contentType: "application/x-protobuf")
        #expect(
            tooLarge.status == 413 && status(tooLarge)?.message.hasPrefix("body_too_large") == true, "\(tooLarge.text)")
        let bomb = try await post(
            collector, body: Data(repeating: 0x20, count: 4 << 20), contentType: "application/x-protobuf", gzip: true)
        #expect(bomb.status == 422 && status(bomb)?.message.hasPrefix("compression_ratio") == true, "\(bomb.text)")

        // Sentry's OTLP route, the key as an SDK configured with a DSN sends it.
        let sentryAuth = [("X-Sentry-Auth", "Sentry sentry_key=\(collector.ingestKey), sentry_version=7")]
        let bySentry = try await post(collector, "/api/1/integration/otlp/v1/logs", body: body, headers: sentryAuth)
        #expect(bySentry.status == 200, "\(bySentry.text)")
        let mismatch = try await post(collector, "/api/2/integration/otlp/v1/logs", body: body, headers: sentryAuth)
        #expect(mismatch.status == 403 && status(mismatch)?.message.hasPrefix("project_mismatch") == true)
        let loki = try await post(collector, "/otlp/v1/logs", body: Self.jsonRequest(tag: "auth-2", badRecords: false))
        #expect(loki.status == 200)
        #expect(try await Self.search(collector, "auth-1").count == 1)
        #expect(try await Self.search(collector, "auth-2").count == 1)
        let bundles = try await HTTP.get(collector, "/api/v1/bundles").json["items"] as? [Any] ?? []
        #expect(bundles.count == 2, "only the accepted requests are stored: \(bundles)")
    }
}
