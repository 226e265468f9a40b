import BlackboxFormat
import BlackboxSentry
import BlackboxTestSupport
import Foundation
import Testing

@testable import BlackboxCollector

/// Envelopes as a hostile holder of a public DSN would send them: every one refused with a reason
/// (never a trap, never a 5xx), and nothing of it stored.
@Suite("Sentry protocol: hostile envelopes")
struct SentryHostileEnvelopeTests {
    static func parse(_ text: String) -> SentryEnvelope.Failure? {
        do {
            _ = try SentryEnvelope(parsing: Data(text.utf8))
            return nil
        } catch {
            return error
        }
    }

    @Test("the parser refuses wrong lengths, missing newlines, too many items and broken headers")
    func parser() throws {
        #expect(Self.parse("") == .missingHeader)
        #expect(Self.parse("not json\n") != nil)
        #expect(Self.parse("[1,2]\n") != nil, "the header must be an object")
        #expect(Self.parse("{}\n{\"type\":\"event\",\"length\":50}\n{}\n") == .lengthBeyondBody(item: 0, length: 50))
        // A length at the edge of Int64 (past what a JSON number holds exactly) is no byte count; one
        // that is, is compared with what is left, never added to an offset: no overflow trap.
        #expect(
            Self.parse("{}\n{\"type\":\"event\",\"length\":9223372036854775807}\n{}\n")
                == .invalidItemHeader(item: 0, "length is not a byte count"))
        #expect(
            Self.parse("{}\n{\"type\":\"event\",\"length\":8999999999999999}\n{}\n")
                == .lengthBeyondBody(item: 0, length: 8_999_999_999_999_999))
        #expect(Self.parse("{}\n{\"type\":\"event\",\"length\":-1}\n{}\n") != nil)
        #expect(Self.parse("{}\n{\"type\":\"event\",\"length\":2}\n{}X\n") == .missingNewline(item: 0))
        #expect(Self.parse("{}\n{\"length\":2}\n{}\n") != nil, "an item needs a type")
        let many = "{}\n" + String(repeating: "{\"type\":\"client_report\"}\n{}\n", count: SentryEnvelope.maxItems + 1)
        #expect(Self.parse(many) == .tooManyItems(limit: SentryEnvelope.maxItems))
        // What SDKs really send: lengths, no lengths, a last payload without a newline.
        let envelope = try SentryEnvelope(
            parsing: Data(
                "{\"event_id\":\"9ec79c33ec9942ab8353589fcb2e04dc\"}\n{\"type\":\"attachment\",\"length\":5}\nhello\n{\"type\":\"event\"}\n{\"message\":\"hi\"}"
                    .utf8))
        #expect(envelope.items.map(\.type) == ["attachment", "event"])
        #expect(
            envelope.items.map { String(decoding: $0.payload, as: UTF8.self) } == ["hello", "{\"message\":\"hi\"}"])
        #expect(envelope.eventID == "9ec79c33ec9942ab8353589fcb2e04dc")
    }

    /// Security review 2026-11-27, finding 2, in the review's shape (many `log` items of many records,
    /// most of them bodiless), at the format, where the plan is made.
    @Test("log items: at most 10,000 records an envelope, bodiless ones skipped, within the indexing budget")
    func boundedLogs() throws {
        let real =
            "{\"items\":["
            + Array(repeating: "{\"body\":\"tick\",\"level\":\"info\"}", count: 4_000)
            .joined(separator: ",") + "]}"
        let bodiless = "{\"items\":[" + Array(repeating: "0", count: 10_000).joined(separator: ",") + "]}"
        var text = "{}\n"
        for payload in [bodiless] + Array(repeating: real, count: 20) {
            text += "{\"type\":\"log\",\"length\":\(payload.utf8.count)}\n\(payload)\n"
        }
        var limits = IngestLimits()
        limits.maxIndexedLinesPerBundle = 6_000
        let bytes = Data(text.utf8)
        let inspection = try SentryEnvelopeFormat(limits: limits, inspectionMemory: nil).inspect(
            bytes, body: ReceivedBody(path: "/nonexistent", sha256: "s", size: bytes.count, bytes: bytes),
            upload: .init(
                key: APIKey(id: 1, projectID: 1, kind: .ingest, prefix: "k", createdAt: Date()), uploadID: nil,
                declaredLength: nil),
            receivedAt: Date())
        let logs = inspection.plan.files.filter { $0.kind == .log }
        // The bodiless item counts nothing; 10,000 real records fill two items and a half.
        #expect(logs.map(\.lineCount) == [0, 4_000, 4_000, 2_000], "\(logs.map(\.lineCount))")
        #expect(inspection.droppedItems["log"] == 17, "\(inspection.droppedItems)")
        // The plan holds the logs to the indexing budget, as it does a bundle's.
        #expect(logs.filter { !$0.skipsIndexing }.map(\.lineCount).reduce(0, +) <= limits.maxIndexedLinesPerBundle)
        #expect(logs.map(\.skipsIndexing) == [false, false, true, false])
    }

    /// Security review 2026-11-27, finding 3: a JSON item's tree is tens of times its bytes, and the
    /// inspection budget counted the envelope's bytes only (four 254 KB requests: 137 MiB to 2.4 GiB).
    @Test("a JSON item is charged its tree's size while it is read; events, sessions and logs have their own caps")
    func jsonItemsChargeTheirTrees() throws {
        func envelope(_ items: [(String, String)]) -> Data {
            var text = "{}\n"
            for (type, payload) in items {
                text += "{\"type\":\"\(type)\",\"length\":\(payload.utf8.count)}\n\(payload)\n"
            }
            return Data(text.utf8)
        }
        func inspect(_ bytes: Data, memory: MemoryBudget?) throws -> FormatInspection {
            try SentryEnvelopeFormat(limits: IngestLimits(), inspectionMemory: memory).inspect(
                bytes, body: ReceivedBody(path: "/nonexistent", sha256: "s", size: bytes.count, bytes: bytes),
                upload: .init(
                    key: APIKey(id: 1, projectID: 1, kind: .ingest, prefix: "k", createdAt: Date()), uploadID: nil,
                    declaredLength: nil),
                receivedAt: Date())
        }
        func refusal(_ bytes: Data, memory: MemoryBudget?) -> APIError? {
            do {
                _ = try inspect(bytes, memory: memory)
                return nil
            } catch {
                return error as? APIError
            }
        }
        // 400 KB of log records: a tree of up to 19 MiB.
        let records =
            "{\"items\":[" + Array(repeating: "{\"body\":\"tick\"}", count: 25_000).joined(separator: ",") + "]}"
        let logs = envelope([("log", records)])
        let small = MemoryBudget(limit: 16 << 20)
        #expect(refusal(logs, memory: small)?.status == 422, "more than the whole budget: never, not later")
        let budget = MemoryBudget(limit: 64 << 20)
        #expect(budget.take(48 << 20, project: 99))
        #expect(refusal(logs, memory: budget)?.status == 503, "the budget is held by others: later")
        budget.giveBack(48 << 20, project: 99)
        #expect(try inspect(logs, memory: budget).plan.files.first?.lineCount == 10_000)
        #expect(budget.inUse == 0, "everything charged is given back")

        let event = "{\"message\":\"" + String(repeating: "x", count: SentryEnvelopeFormat.maxEventItemBytes) + "\"}"
        #expect(refusal(envelope([("event", event)]), memory: nil)?.status == 422, "Sentry's own 1 MiB bound")
        let aggregates =
            "{\"aggregates\":[" + Array(repeating: "{\"started\":0,\"exited\":1}", count: 4_000).joined(separator: ",")
            + "]}"
        let sessions = try inspect(envelope([("sessions", aggregates)]), memory: nil)
        #expect(sessions.droppedItems["sessions"] == 1 && sessions.plan.sessions.isEmpty, "\(sessions.droppedItems)")
    }

    @Test("bombs under gzip, deflate and br, deep JSON and NULs: refused or cleaned, nothing else stored")
    func overHTTP() async throws {
        let collector = try await TestCollector.start()
        defer { Task { await collector.stop() } }
        let scratch = TemporaryDirectory()
        defer { scratch.remove() }
        func post(_ body: Data, encoding: String? = nil) async throws -> HTTPResult {
            var headers = [("X-Sentry-Auth", "Sentry sentry_key=\(collector.ingestKey)")]
            if let encoding { headers.append(("Content-Encoding", encoding)) }
            return try await HTTP.request(
                collector.baseURL + "/api/1/envelope/", method: .POST, headers: headers, body: body)
        }
        // 64 MiB of one character inside an event: each encoding makes it a few KB at most.
        let bomb = try Self.bomb(in: scratch)
        for (encoding, body) in bomb {
            let answer = try await post(body, encoding: encoding)
            #expect(
                answer.status == 413 || answer.status == 422,
                "\(encoding) (\(body.count) bytes): \(answer.status) \(answer.text)")
            #expect(
                answer.text.contains("compression_ratio") || answer.text.contains("total_too_large"), "\(answer.text)")
        }
        let truncated = try await post(Data(bomb[0].1.prefix(20)), encoding: bomb[0].0)
        #expect(truncated.status == 400 && truncated.text.contains("corrupt_encoding"), "\(truncated.text)")
        #expect(try await post(Data("{}".utf8), encoding: "compress").status == 415)

        // Nesting past what the JSON decoder allows: refused, not a stack overflow.
        let deep = String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)
        let deepEvent = try await post(SentryEnvelopeFormat.envelope(ofEvent: Data("{\"extra\":{\"x\":\(deep)}}".utf8)))
        #expect(deepEvent.status == 400 && deepEvent.text.contains("invalid_envelope"), "\(deepEvent.text.prefix(300))")
        #expect(try await post(Data("{\"type\":}\n".utf8)).status == 400)
        let stored = try await HTTP.get(collector, "/api/v1/bundles").json["items"] as? [Any] ?? []
        #expect(stored.isEmpty, "\(stored)")

        // NULs and an overlong field are stored cleaned and cut (PostgreSQL's text refuses NUL).
        let long = String(repeating: "x", count: 20_000)
        let event = Data(#"{"message":"a\u0000b","tags":{"long":"\#(long)"}}"#.utf8)
        let cleaned = try await post(SentryEnvelopeFormat.envelope(ofEvent: event))
        #expect(cleaned.status == 200, "\(cleaned.text)")
        let group = try #require(
            (try await HTTP.get(collector, "/api/v1/groups").json["items"] as? [[String: Any]])?.first)
        let report = try CrashReport.decode(
            try await HTTP.get(collector, "/api/v1/reports/\(try #require(group["latestReportID"] as? Int))").body)
        #expect(report.reason == "a\u{FFFD}b")
        #expect(report.annotations?["long"]?.hasSuffix(FieldSanitizer.cutMarker) == true)
    }

    /// An envelope whose one event holds 64 MiB of `a`, compressed by Python's zlib, gzip and brotli.
    static func bomb(in scratch: TemporaryDirectory) throws -> [(String, Data)] {
        let script = """
            import sys, zlib, brotli
            head = b'{}\\n{"type":"event"}\\n{"message":"'
            size = 64 << 20
            def chunks():
                yield head
                block = b"a" * (1 << 20)
                for _ in range(size >> 20): yield block
                yield b'"}\\n'
            z = zlib.compressobj(9, zlib.DEFLATED, 31); g = b"".join(z.compress(c) for c in chunks()) + z.flush()
            z = zlib.compressobj(9); d = b"".join(z.compress(c) for c in chunks()) + z.flush()
            b = brotli.Compressor(quality=5); r = b"".join(b.process(c) for c in chunks()) + b.finish()
            for name, data in (("gzip", g), ("deflate", d), ("br", r)):
                open(sys.argv[1] + "/" + name, "wb").write(data)
            """
        #expect(try run(PythonPeers.python, ["-c", script, scratch.path], in: scratch.path) == 0)
        return try ["gzip", "deflate", "br"].map {
            ($0, try Data(contentsOf: URL(fileURLWithPath: "\(scratch.path)/\($0)")))
        }
    }
}
