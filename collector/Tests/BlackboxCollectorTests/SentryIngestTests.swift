import BlackboxFormat
import BlackboxSymbols
import BlackboxTestSupport
import Foundation
import Testing

@testable import BlackboxCollector

/// Issue 34: the collector speaks the Sentry protocol. The real sentry-python (PyPI, pinned) sends to
/// a collector on loopback; what it sent is read back through the JSON API.
@Suite("Sentry protocol: a real sentry-sdk against the collector")
struct SentryIngestTests {
    static func dsn(_ collector: TestCollector, key: String? = nil) -> String {
        SentryAuthentication.dsn(publicURL: collector.baseURL, ingestKey: key ?? collector.ingestKey, projectID: 1)
    }

    @Test("X-Sentry-Auth's fields, with the white space and case SDKs send")
    func authenticationFields() {
        #expect(
            SentryAuthentication.fields("Sentry sentry_key=abc, sentry_version=7,\tsentry_client=sentry.python/2.0 ")
                == ["sentry_key": "abc", "sentry_version": "7", "sentry_client": "sentry.python/2.0"])
        #expect(SentryAuthentication.fields("  sentry sentry_key = abc\t") == ["sentry_key": "abc"])
        #expect(SentryAuthentication.fields("SENTRY sentry_key=a=b, broken, =x") == ["sentry_key": "a=b", "": "x"])
        #expect(SentryAuthentication.fields("sentry_key=abc") == ["sentry_key": "abc"])
    }

    @Test("exceptions, messages, a crashed session and structured logs, with brotli and with gzip")
    func realSDK() async throws {
        let collector = try await TestCollector.start()
        defer { Task { await collector.stop() } }
        for (compression, tag) in [("br", "run-br"), ("gzip", "run-gzip")] {
            let result = try await PythonPeers.run(PythonPeers.sentryClient, [Self.dsn(collector), compression, tag])
            #expect(result.status == 0, "\(result.stderr)")
            #expect(result.stdout.hasPrefix(compression == "br" ? "brotli" : "no-brotli"), "\(result.stdout)")
        }

        let groups = try await HTTP.get(collector, "/api/v1/groups").json["items"] as? [[String: Any]] ?? []
        let titles = groups.compactMap { $0["title"] as? String }
        // The exception's two runs are one group, titled by its type and the app's innermost function.
        let exception = try #require(
            groups.first { ($0["title"] as? String)?.hasPrefix("ValueError") == true }, "\(titles)")
        #expect(exception["title"] as? String == "ValueError in __main__.parse", "\(titles)")
        #expect(exception["count"] as? Int == 2)
        #expect(exception["versions"] as? [String: Int] == ["1.4.2": 2])
        #expect(exception["hosts"] as? [String: Int] == ["web-7": 2])
        // Messages group by their normalized text: the two runs' differ only in the tag's digits.
        #expect(titles.contains { $0.hasPrefix("message: cache warm-up took too long in run-") }, "\(titles)")

        let reportID = try #require(exception["latestReportID"] as? Int)
        let report = try CrashReport.decode(try await HTTP.get(collector, "/api/v1/reports/\(reportID)").body)
        #expect(report.kind == .error)
        #expect(report.reason == "ValueError: invalid literal for int() with base 10: 'seven'")
        let functions = report.frames.compactMap { $0.symbols.first?.function }
        #expect(
            Array(functions.prefix(3)) == ["__main__.parse", "__main__.handle", "__main__.<module>"], "\(functions)")
        #expect(report.frames.first?.symbols.first?.line == 15, "file:line from the SDK (`return int(...)`)")
        // The source lines the SDK read around it (its context_line, pre_context, post_context).
        let context = try #require(report.frames.first?.sourceContext, "no source context")
        #expect(context.line.contains("return int(order[\"count\"])"), "\(context)")
        #expect(!context.before.isEmpty && context.before.count <= SentryEventReport.limits.contextLines)
        #expect(report.frames.allSatisfy { $0.inApp == true })
        #expect(report.app == .init(name: "shop", version: "1.4.2", build: "77"))
        #expect(report.metadata["sentry.environment"] == "test" && report.metadata["sentry.platform"] == "python")
        #expect(report.annotations?["run"]?.hasPrefix("run-") == true, "tags become annotations")
        // The user is kept only as a digest of its id: no email address is stored.
        #expect(report.metadata["user.id-digest"]?.count == 16)
        // (The source lines around the frames are the script's own text, with its literals.)
        var withoutSource = report
        withoutSource.frames = report.frames.map { frame in
            var frame = frame
            frame.sourceContext = nil
            return frame
        }
        withoutSource.threads = nil
        #expect(
            !String(decoding: try CrashReport.makeEncoder().encode(withoutSource), as: UTF8.self).contains("someone@"))
        #expect(report.scope?["trace-id"]?.count == 32, "the trace context's id, as a field")

        // Release health: each run's session ended crashed.
        let releases = try await HTTP.get(collector, "/api/v1/releases").json["items"] as? [[String: Any]] ?? []
        let release = try #require(releases.first { $0["version"] as? String == "1.4.2" }, "\(releases)")
        #expect(release["crashed"] as? Int == 2 && release["sessions"] as? Int == 2, "\(release)")

        // Structured logs are lines of the bundle, found by log search once indexed. The SDK's log
        // batch may arrive after its events (a loaded CI run searched before it had): asked again
        // for up to 30 s.
        for tag in ["run-br", "run-gzip"] {
            var text: [String] = []
            let deadline = ContinuousClock.now + .seconds(30)
            while ContinuousClock.now < deadline {
                await collector.server.indexPendingLogs()
                let hits =
                    try await HTTP.get(collector, "/api/v1/logs/search?q=\(tag)").json["items"] as? [[String: Any]]
                    ?? []
                text = hits.compactMap { $0["text"] as? String }
                if !text.isEmpty { break }
                try await Task.sleep(for: .milliseconds(250))
            }
            // Labelled by the app as the SDK names it (its release), as Blackbox's own lines are.
            #expect(
                text.contains { $0.contains("INFO  shop@1.4.2+77: payment accepted for order \(tag)") }, "\(text)")
        }
    }

    @Test("a wrong key is 401 and stores nothing; another project's URL is 403; the legacy store endpoint")
    func authentication() async throws {
        let collector = try await TestCollector.start()
        defer { Task { await collector.stop() } }
        let event = Data(#"{"event_id":"0123456789abcdef0123456789abcdef","message":"hello","level":"error"}"#.utf8)
        let envelope = try SentryEnvelopeFormat.envelope(ofEvent: event)
        func post(_ path: String, key: String?, body: Data, headers: [(String, String)] = []) async throws -> HTTPResult
        {
            var all = headers
            if let key {
                all.append(("X-Sentry-Auth", "Sentry sentry_key=\(key), sentry_version=7, sentry_client=test/1"))
            }
            return try await HTTP.request(collector.baseURL + path, method: .POST, headers: all, body: body)
        }
        #expect(try await post("/api/1/envelope/", key: "bbx_ingest_wrong", body: envelope).status == 401)
        #expect(try await post("/api/1/envelope/", key: nil, body: envelope).status == 401)
        let mismatch = try await post("/api/2/envelope/", key: collector.ingestKey, body: envelope)
        #expect(mismatch.status == 403 && mismatch.text.contains("project_mismatch"), "\(mismatch.text)")
        let stored = try await HTTP.get(collector, "/api/v1/bundles").json["items"] as? [Any] ?? []
        #expect(stored.isEmpty, "nothing stored for refused requests: \(stored)")

        // The legacy endpoint: one event as JSON, the key as a query parameter, zlib-deflated.
        let scratch = TemporaryDirectory()
        defer { scratch.remove() }
        let deflated = try Self.compress(event, with: "zlib", in: scratch)
        let legacy = try await HTTP.request(
            collector.baseURL + "/api/1/store/?sentry_key=\(collector.ingestKey)", method: .POST,
            headers: [("Content-Encoding", "deflate")], body: deflated)
        #expect(legacy.status == 200, "\(legacy.text)")
        #expect(legacy.json["id"] as? String == "0123456789abcdef0123456789abcdef")
        // The same event again (an SDK's retry) is stored once.
        let again = try await post("/api/1/envelope/", key: collector.ingestKey, body: envelope)
        #expect(again.status == 200, "\(again.text)")
        let groups = try await HTTP.get(collector, "/api/v1/groups").json["items"] as? [[String: Any]] ?? []
        #expect(groups.count == 1 && groups.first?["count"] as? Int == 1, "\(groups)")

        // The DSN in the envelope's header as the only credential (relays, browser tunnels).
        func dsnEnvelope(_ dsn: String, message: String) -> Data {
            var body = Data("{\"dsn\":\"\(dsn)\"}\n{\"type\":\"event\"}\n".utf8)
            body += Data("{\"message\":\"\(message)\"}\n".utf8)
            return body
        }
        let byDSN = try await post(
            "/api/1/envelope/", key: nil, body: dsnEnvelope(Self.dsn(collector), message: "via dsn"))
        #expect(byDSN.status == 200, "\(byDSN.text)")
        let wrongProject = try await post(
            "/api/2/envelope/", key: nil, body: dsnEnvelope(Self.dsn(collector), message: "elsewhere"))
        #expect(wrongProject.status == 403, "\(wrongProject.text)")
        let wrongKey = try await post(
            "/api/1/envelope/", key: nil,
            body: dsnEnvelope(Self.dsn(collector, key: "bbx_ingest_nope"), message: "no"))
        #expect(wrongKey.status == 401, "\(wrongKey.text)")
        let titles = (try await HTTP.get(collector, "/api/v1/groups").json["items"] as? [[String: Any]] ?? [])
            .compactMap { $0["title"] as? String }
        #expect(titles.contains("message: via dsn") && !titles.contains { $0.contains("elsewhere") }, "\(titles)")
    }

    @Test("a native event's frames are named from the symbol store: function and file:line")
    func nativeEventSymbolicated() async throws {
        let binary = "\(Tool.binDirectory)/blackbox-crash-child"
        let buildID = try #require(ELFBuildID.read(path: binary), "no debug crash child at \(binary)")
        let nm = try await Tool.Running("/usr/bin/env", ["nm", "--defined-only", binary], environment: [:]).wait()
        let symbol = "$s20blackbox_crash_child20failEnsureRepeatedlySiyF"
        let line = try #require(nm.stdout.split(separator: "\n").first { $0.hasSuffix(" T \(symbol)") }, "\(nm.stderr)")
        let functionAddress = try #require(UInt64(line.split(separator: " ")[0], radix: 16))

        let collector = try await TestCollector.start()
        defer { Task { await collector.stop() } }
        let upload = try await SymbolStoreTests.put(
            collector, buildID: buildID, name: "blackbox-crash-child",
            body: try Data(contentsOf: URL(fileURLWithPath: binary)),
            token: try await SymbolStoreTests.symbolsKey(collector))
        #expect(upload.status == 201, "\(upload.text)")

        let base: UInt64 = 0x5555_5555_4000
        let event: [String: Any] = [
            "event_id": "fedcba9876543210fedcba9876543210", "platform": "native", "level": "fatal",
            "release": "crashy@2.0",
            "exception": [
                "values": [
                    [
                        "type": "SIGSEGV", "value": "Segmentation fault",
                        "mechanism": [
                            "type": "signalhandler", "handled": false,
                            "meta": ["signal": ["number": 11, "name": "SIGSEGV"]],
                        ],
                        // Oldest first, as Sentry orders them: an unknown caller, then the crashed frame.
                        "stacktrace": [
                            "frames": [
                                ["instruction_addr": "0x7f0000001000"],
                                ["instruction_addr": "0x" + String(base + functionAddress + 4, radix: 16)],
                            ]
                        ],
                    ]
                ]
            ],
            "debug_meta": [
                "images": [
                    [
                        "type": "elf", "code_id": buildID, "image_addr": "0x" + String(base, radix: 16),
                        "image_size": 64 << 20, "code_file": "/srv/app/blackbox-crash-child",
                    ]
                ]
            ],
        ]
        let body = try SentryEnvelopeFormat.envelope(ofEvent: JSONSerialization.data(withJSONObject: event))
        let answer = try await HTTP.request(
            collector.baseURL + "/api/1/envelope/", method: .POST,
            headers: [("X-Sentry-Auth", "Sentry sentry_key=\(collector.ingestKey)")], body: body)
        #expect(answer.status == 200 && answer.json["id"] as? String == "fedcba9876543210fedcba9876543210")

        await collector.server.symbolicatePending()
        let groups = try await HTTP.get(collector, "/api/v1/groups").json["items"] as? [[String: Any]] ?? []
        let group = try #require(groups.first, "\(groups)")
        let report = try CrashReport.decode(
            try await HTTP.get(collector, "/api/v1/reports/\(try #require(group["latestReportID"] as? Int))").body)
        let top = try #require(report.frames.first?.symbols.last, "\(report.frames)")
        #expect(top.function.contains("failEnsureRepeatedly"), "\(report.frames)")
        #expect(top.file?.hasSuffix("Triggers.swift") == true && top.line != nil, "\(top)")
        #expect(report.frames.first?.symbolication == .debugInfo)
        #expect(report.kind == .crash && report.signal?.name == "SIGSEGV")
        #expect(report.images.first?.buildID == buildID)
        #expect((group["title"] as? String)?.contains("failEnsureRepeatedly") == true, "\(group)")
    }

    @Test("attachments are files of the upload; transactions and unknown items are dropped and counted")
    func itemsKeptAndDropped() async throws {
        let collector = try await TestCollector.start()
        defer { Task { await collector.stop() } }
        let attachment = Data("line one\nline two\n".utf8)
        var body = Data(#"{"event_id":"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"}"#.utf8) + Data("\n".utf8)
        body += Data(#"{"type":"event"}"#.utf8) + Data("\n".utf8) + Data(#"{"message":"with a file"}"#.utf8)
        body += Data("\n".utf8)
        body += Data(#"{"type":"attachment","length":\#(attachment.count),"filename":"../../notes.txt"}"#.utf8)
        body += Data("\n".utf8) + attachment + Data("\n".utf8)
        for type in ["transaction", "client_report", "made_up_type", "transaction"] {
            body += Data(#"{"type":"\#(type)"}"#.utf8) + Data("\n{}\n".utf8)
        }
        let answer = try await HTTP.request(
            collector.baseURL + "/api/1/envelope/", method: .POST,
            headers: [("X-Sentry-Auth", "Sentry sentry_key=\(collector.ingestKey)")], body: body)
        #expect(answer.status == 200 && answer.json["id"] as? String == "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa")

        let bundle = try #require(
            (try await HTTP.get(collector, "/api/v1/bundles").json["items"] as? [[String: Any]])?.first)
        let bundleID = try #require(bundle["id"] as? Int)
        let files = try await HTTP.get(collector, "/api/v1/bundles/\(bundleID)/files").body
        let listed = (try JSONSerialization.jsonObject(with: files) as? [[String: Any]]) ?? []
        let file = try #require(listed.first { $0["path"] as? String == "items/1-notes.txt" }, "\(listed)")
        let download = try await HTTP.get(collector, "/api/v1/files/\(try #require(file["id"] as? Int))/content")
        #expect(download.status == 200 && download.body == attachment, "\(download.text)")

        let metrics = try await HTTP.request(collector.baseURL + "/metrics").text
        #expect(metrics.contains(#"blackbox_sentry_items_dropped_total{type="transaction"} 2"#), "\(metrics)")
        #expect(!metrics.contains(#"type="client_report""#), "client reports are read (an empty one counts nothing)")
        #expect(metrics.contains(#"blackbox_sentry_items_dropped_total{type="other"} 1"#))
    }

    @Test("client reports: what sentry-python dropped is lost before arrival, per release, category and reason")
    func clientReports() async throws {
        let collector = try await TestCollector.start()
        defer { Task { await collector.stop() } }
        // The SDK's own bookkeeping: before_send drops three events, which it counts and sends as a
        // client report when it flushes.
        let script = #"""
            import sys, sentry_sdk
            sentry_sdk.init(dsn=sys.argv[1], release="shop@2.0.1", before_send=lambda event, hint: None)
            for n in range(3):
                sentry_sdk.capture_message("dropped before sending %d" % n)
            sentry_sdk.flush(15)
            """#
        let result = try await PythonPeers.run(script, [Self.dsn(collector)])
        #expect(result.status == 0, "\(result.stderr)")
        func losses() async throws -> [[String: Any]] {
            try await HTTP.get(collector, "/api/v1/losses").json["items"] as? [[String: Any]] ?? []
        }
        let dropped = try #require(try await losses().first { $0["reason"] as? String == "before_send" })
        #expect(dropped["category"] as? String == "error" && dropped["quantity"] as? Int == 3, "\(dropped)")
        #expect(dropped["version"] as? String == "unknown", "a client report alone names no release: \(dropped)")

        // Blackbox's own client reports name the release in the header's trace context.
        let ownReport = #"{"discarded_events":[{"reason":"too_large","category":"error","quantity":2}]}"#
        let own = try await HTTP.request(
            collector.baseURL + "/api/1/envelope/", method: .POST,
            headers: [("X-Sentry-Auth", "Sentry sentry_key=\(collector.ingestKey)")],
            body: Data("{\"trace\":{\"release\":\"shop@3.1+9\"}}\n{\"type\":\"client_report\"}\n\(ownReport)\n".utf8))
        #expect(own.status == 200, "\(own.text)")
        #expect(
            try await losses().contains {
                $0["version"] as? String == "3.1" && $0["reason"] as? String == "too_large"
                    && $0["quantity"] as? Int == 2
            })

        // Beside an event, its release; older SDKs' lists by the reason they stand for; names cut to
        // short words; quantities bounded; past 64 entries an item counts no more.
        var entries = [
            #"{"reason":"Queue Overflow!","category":"error","quantity":5}"#,
            #"{"reason":"huge","category":"error","quantity":99999999999}"#,
        ]
        entries += (0..<70).map { #"{"reason":"r\#($0)","category":"log_item","quantity":1}"# }
        let report =
            #"{"timestamp":1,"discarded_events":[\#(entries.joined(separator: ","))],"rate_limited_events":[{"category":"session","quantity":99999999999}]}"#
        var body = Data(#"{"event_id":"bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"}"#.utf8) + Data("\n".utf8)
        body += Data(#"{"type":"event"}"#.utf8) + Data("\n".utf8)
        body += Data(#"{"message":"with a report","release":"shop@2.0.2"}"#.utf8) + Data("\n".utf8)
        body += Data(#"{"type":"client_report"}"#.utf8) + Data("\n\(report)\n".utf8)
        let answer = try await HTTP.request(
            collector.baseURL + "/api/1/envelope/", method: .POST,
            headers: [("X-Sentry-Auth", "Sentry sentry_key=\(collector.ingestKey)")], body: body)
        #expect(answer.status == 200, "\(answer.text)")
        let all = try await losses().filter { $0["version"] as? String == "2.0.2" }
        #expect(all.count == SentryClientReports.maxEntries, "\(all.count) rows")
        #expect(all.contains { $0["reason"] as? String == "queueoverflow" && $0["quantity"] as? Int == 5 }, "\(all)")
        #expect(!all.contains { $0["reason"] as? String == "ratelimit_backoff" }, "the 65th entry is not counted")
        #expect(all.contains { $0["reason"] as? String == "huge" && $0["quantity"] as? Int == LossRows.maxQuantity })
    }

    @Test("a fingerprint decides the group: equal fingerprints join, {{ default }} keeps the usual split")
    func fingerprints() async throws {
        let collector = try await TestCollector.start()
        defer { Task { await collector.stop() } }
        func send(_ type: String, fingerprint: [String]) async throws {
            let event: [String: Any] = [
                "exception": ["values": [["type": type, "value": "boom"]]], "fingerprint": fingerprint,
            ]
            let answer = try await HTTP.request(
                collector.baseURL + "/api/1/envelope/", method: .POST,
                headers: [("X-Sentry-Auth", "Sentry sentry_key=\(collector.ingestKey)")],
                body: SentryEnvelopeFormat.envelope(ofEvent: try JSONSerialization.data(withJSONObject: event)))
            #expect(answer.status == 200, "\(answer.text)")
        }
        try await send("TimeoutError", fingerprint: ["payments-gateway"])
        try await send("ConnectionError", fingerprint: ["payments-gateway"])
        try await send("KeyError", fingerprint: ["{{ default }}", "eu"])
        try await send("IndexError", fingerprint: ["{{ default }}", "eu"])
        let groups = try await HTTP.get(collector, "/api/v1/groups").json["items"] as? [[String: Any]] ?? []
        let counts = groups.compactMap { $0["count"] as? Int }.sorted()
        #expect(counts == [1, 1, 2], "one group for the shared fingerprint, two for the defaults: \(groups)")
    }

    @Test("session aggregates feed release health; over the quota the answer is a 429 SDKs understand")
    func aggregatesAndRateLimits() async throws {
        let collector = try await TestCollector.start { $0.limits.maxBundleBytesPerProject = 4_096 }
        defer { Task { await collector.stop() } }
        let started = Date().addingTimeInterval(-60).formatted(.iso8601)
        let aggregates =
            #"{"attrs":{"release":"api@3.0"},"aggregates":[{"started":"\#(started)","exited":7,"errored":2,"crashed":1,"abnormal":1}]}"#
        var body = Data("{}\n".utf8) + Data(#"{"type":"sessions"}"#.utf8) + Data("\n\(aggregates)\n".utf8)
        func post(_ body: Data) async throws -> HTTPResult {
            try await HTTP.request(
                collector.baseURL + "/api/1/envelope/", method: .POST,
                headers: [("X-Sentry-Auth", "Sentry sentry_key=\(collector.ingestKey)")], body: body)
        }
        #expect(try await post(body).status == 200)
        // Aggregates are what server SDKs send, one session per request: request health, not runs.
        let releases = try await HTTP.get(collector, "/api/v1/releases").json["items"] as? [[String: Any]] ?? []
        let release = try #require(releases.first { $0["version"] as? String == "3.0" }, "\(releases)")
        #expect(release["sessions"] as? Int == 0, "\(release)")
        let requests = try #require(release["requests"] as? [String: Int], "\(release)")
        #expect(requests == ["total": 11, "serverErrors": 2, "crashed": 2], "\(release)")
        #expect(abs((release["crashFreeRequestRate"] as? Double ?? 0) - 9.0 / 11) < 1e-9, "\(release)")

        // Past the project's quota (4 KiB here): 429, with the headers every SDK honours.
        var refused: HTTPResult?
        for attempt in 0..<40 where refused == nil {
            body = try SentryEnvelopeFormat.envelope(
                ofEvent: Data(#"{"message":"filler \#(attempt) \#(String(repeating: "x", count: 2_000))"}"#.utf8))
            let answer = try await post(body)
            if answer.status == 429 { refused = answer } else { try await Task.sleep(for: .milliseconds(100)) }
        }
        let limited = try #require(refused, "never refused past the quota")
        #expect(limited.headers["retry-after"] == "3600", "\(limited.headers)")
        #expect(
            limited.headers["x-sentry-rate-limits"]
                == "3600:\(SentryRefusal.limitedCategories):organization:quota_exceeded", "\(limited.headers)")
        #expect(limited.headers["x-sentry-rate-limits"]?.contains("internal") == false, "client reports stay free")
        #expect(limited.json["detail"] as? String != nil, "\(limited.text)")

        // Over the quota, client reports alone still count; with anything else, or too large, refused.
        func clientReport(_ entries: Int) -> Data {
            let entry = #"{"reason":"ratelimit_backoff","category":"error","quantity":1}"#
            let report = #"{"discarded_events":[\#(Array(repeating: entry, count: entries).joined(separator: ","))]}"#
            return Data("{}\n{\"type\":\"client_report\"}\n\(report)\n".utf8)
        }
        #expect(try await post(clientReport(1)).status == 200)
        #expect(try await post(clientReport(1) + body.drop { $0 != 0x0A }.dropFirst()).status == 429, "with an event")
        #expect(try await post(clientReport(300)).status == 429, "past \(SentryEndpoint.maxLossesOnlyBytes) bytes")
    }

    @Test("sentry-python's WSGI integration counts each request as a session: they become the release's request health")
    func requestSessions() async throws {
        let collector = try await TestCollector.start()
        defer { Task { await collector.stop() } }
        // Six requests answered, one with a handled error, two with an unhandled one (the integration
        // marks those crashed), through sentry-python's own WSGI middleware, in request mode.
        let script = #"""
            import sys, sentry_sdk
            from wsgiref.util import setup_testing_defaults
            from sentry_sdk.integrations.wsgi import SentryWsgiMiddleware
            sentry_sdk.init(dsn=sys.argv[1], release="api@5.0")
            def app(environ, start_response):
                if environ["PATH_INFO"] == "/fail":
                    raise RuntimeError("boom")
                if environ["PATH_INFO"] == "/handled":
                    sentry_sdk.capture_exception(ValueError("handled"))
                start_response("200 OK", [("Content-Type", "text/plain")])
                return [b"ok"]
            wrapped = SentryWsgiMiddleware(app)
            for path in ["/ok"] * 6 + ["/handled"] + ["/fail"] * 2:
                environ = {}
                setup_testing_defaults(environ)
                environ["PATH_INFO"] = path
                try:
                    list(wrapped(environ, lambda *args: None))
                except RuntimeError:
                    pass
            sentry_sdk.flush(15)
            """#
        let result = try await PythonPeers.run(script, [Self.dsn(collector)])
        #expect(result.status == 0, "\(result.stderr)")
        var release: [String: Any]?
        for _ in 0..<50 {
            let releases = try await HTTP.get(collector, "/api/v1/releases").json["items"] as? [[String: Any]] ?? []
            release = releases.first { $0["version"] as? String == "5.0" }
            if (release?["requests"] as? [String: Int])?["total"] == 9 { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        let found = try #require(release, "no release 5.0")
        #expect(found["requests"] as? [String: Int] == ["total": 9, "serverErrors": 1, "crashed": 2], "\(found)")
        #expect(abs((found["errorFreeRequestRate"] as? Double ?? 0) - 6.0 / 9) < 1e-9, "\(found)")
        let page = try await HTTP.get(collector, "/releases")
        #expect(page.text.contains(#"<td class="number requests">9</td>"#), "\(page.text.prefix(3000))")
        #expect(page.text.contains(#"<td class="number error-free-requests">66.67 %</td>"#))
    }

    @Test("a rate-limited sentry-python counts what the limit made it drop, and its client report passes the quota")
    func rateLimitedSDKReportsItsLosses() async throws {
        let collector = try await TestCollector.start { $0.limits.maxBundleBytesPerProject = 1 }
        defer { Task { await collector.stop() } }
        // The first event fills the quota; the second is refused (429, an hour of rate limits for every
        // category but client reports); the SDK drops the next three itself and says so at flush.
        let script = #"""
            import sys, sentry_sdk
            sentry_sdk.init(dsn=sys.argv[1], release="shop@4.0", auto_session_tracking=False)
            sentry_sdk.capture_message("fills the quota")
            sentry_sdk.flush(15)
            sentry_sdk.capture_message("refused")
            sentry_sdk.flush(15)
            for n in range(3):
                sentry_sdk.capture_message("held back %d" % n)
            sentry_sdk.flush(15)
            """#
        let result = try await PythonPeers.run(script, [Self.dsn(collector)])
        #expect(result.status == 0, "\(result.stderr)")
        let losses = try await HTTP.get(collector, "/api/v1/losses").json["items"] as? [[String: Any]] ?? []
        let backoff = losses.filter {
            $0["reason"] as? String == "ratelimit_backoff" && $0["category"] as? String == "error"
        }
        #expect(backoff.map { $0["quantity"] as? Int } == [3], "\(losses)")
        let groups = try await HTTP.get(collector, "/api/v1/groups").json["items"] as? [[String: Any]] ?? []
        #expect(groups.count == 1, "only the first event was stored: \(groups)")
    }

    /// `python -c` with the venv's zlib/gzip/brotli, so the bytes are what real encoders make.
    static func compress(_ data: Data, with encoding: String, in scratch: TemporaryDirectory) throws -> Data {
        let input = scratch.write("plain-\(UUID().uuidString)", data)
        let output = input + ".out"
        let script = """
            import sys, zlib, gzip
            data = open(sys.argv[2], "rb").read()
            if sys.argv[1] == "zlib": out = zlib.compress(data)
            elif sys.argv[1] == "gzip": out = gzip.compress(data)
            else:
                import brotli
                out = brotli.compress(data)
            open(sys.argv[3], "wb").write(out)
            """
        #expect(try run(PythonPeers.python, ["-c", script, encoding, input, output], in: scratch.path) == 0)
        return try Data(contentsOf: URL(fileURLWithPath: output))
    }
}
