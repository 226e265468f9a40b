#if Upload
    import Blackbox
    import BlackboxCompression
    import BlackboxFormat
    import BlackboxTestSupport
    import Foundation
    import Logging
    import Testing

    @testable import BlackboxUpload

    @Suite struct SentryDeliveryTests {
        @Test func dsnsAreParsedAndCheckedByPart() throws {
            let dsn = try SentryDSN("https://abc_123@sentry.example.com:8443/sub/path/42")
            #expect(dsn.publicKey == "abc_123" && dsn.host == "sentry.example.com" && dsn.port == 8443)
            #expect(dsn.envelopeURL == "https://sentry.example.com:8443/sub/path/api/42/envelope/")
            #expect(try SentryDSN("http://key:secret@127.0.0.1/7").description == "http://key@127.0.0.1/7")
            for bad in [
                "ftp://key@host/1", "https://host/1", "https://key@/1", "https://key@host/", "https://key@host/abc",
                "https://k%20y@host/1", "",
            ] {
                #expect(throws: SentryDSN.Problem.self, "\(bad)") { try SentryDSN(bad) }
            }
            #expect(try SentryDSN.fromEnvironment(["SENTRY_DSN": ""]) == nil)
            let delivery = try #require(
                try SentryDelivery.fromEnvironment([
                    "SENTRY_DSN": "http://k@h/3", "SENTRY_RELEASE": "shop@9", "SENTRY_ENVIRONMENT": "staging",
                ]))
            #expect(delivery.release == "shop@9" && delivery.environment == "staging" && delivery.dsn.projectID == "3")
        }

        /// A Swift runtime failure in the app's own function, inlined into a caller, with a system
        /// frame and an async caller; a second thread; a log tail.
        static func crash() -> CrashReport {
            var report = Fixtures.report(kind: .crash)
            report.reason = "Swift runtime failure: Index out of range"
            report.signal = .init(number: 4, name: "SIGILL", code: 2, codeName: "ILL_ILLOPN", faultAddress: "0x5000")
            report.images = [
                .init(
                    path: "/srv/shop", bias: "0x5000", start: "0x5000", end: "0x9000", buildID: "b0b1b2b3b4b5b6b7b8b9"),
                .init(
                    path: "/usr/lib/x86_64-linux-gnu/libc.so.6", bias: "0x7f00", start: "0x7f00", end: "0x8f00",
                    buildID: nil),
            ]
            var top = CrashReport.Frame(index: 0, address: "0x5010", imageIndex: 0, imageOffset: "0x10")
            top.symbols = [
                .init(function: "Swift runtime failure: Index out of range", inlined: true),
                .init(function: "shop.priceOfItem(at: Swift.Int) -> Swift.Int", file: "/src/Shop.swift", line: 12),
            ]
            var system = CrashReport.Frame(index: 1, address: "0x7f10", imageIndex: 1, imageOffset: "0x10")
            system.symbols = [.init(function: "__libc_start_call_main")]
            var resume = CrashReport.Frame(index: 2, address: "0x5100", imageIndex: 0, imageOffset: "0x100")
            resume.symbols = [.init(function: "shop.handle(request:)", file: "/src/Handler.swift", line: 40)]
            resume.asyncResume = true
            report.frames = [top, system, resume]
            report.threads = [
                .init(id: 42, name: "main", crashed: true, frameSource: "libunwind", frames: report.frames),
                .init(id: 43, name: "worker", crashed: false, frameSource: "libunwind", frames: [system]),
            ]
            report.logTail = ["2026-11-26T09:00:00.250Z WARN  shop.db: slow query ms=900", "not a log line"]
            report.scope = ["route": "/items/{id}", "method": "GET", "request-id": "r-7", "trace-id": "ab12"]
            report.annotations = ["tenant": "acme"]
            return report
        }

        @Test func aCrashIsAFatalNativeEventWithEveryThreadAndItsImages() throws {
            let report = Self.crash()
            let event = try #require(SentryEvent(report: report, release: nil, environment: "production"))
            #expect(event.eventID == report.id.uuidString.replacingOccurrences(of: "-", with: "").lowercased())
            #expect(event.level == "fatal" && event.platform == "native")
            #expect(event.release == "shop@1.2+7" && event.dist == "7" && event.serverName == "web-1")
            let exception = try #require(event.exception?.values.first)
            #expect(exception.type == "Fatal error" && exception.value == "Index out of range")
            #expect(exception.mechanism?.type == "signalhandler" && exception.mechanism?.handled == false)
            #expect(exception.mechanism?.meta?.signal?.name == "SIGILL" && exception.threadID == 42)
            // Oldest first, one frame per symbol (the inlined failure marker its own frame).
            let frames = try #require(exception.stacktrace?.frames)
            #expect(
                frames.map(\.function) == [
                    "shop.handle(request:)", "__libc_start_call_main",
                    "shop.priceOfItem(at: Swift.Int) -> Swift.Int", "Swift runtime failure: Index out of range",
                ])
            #expect(frames.map(\.inApp) == [true, false, true, false])
            #expect(frames.map(\.stackStart) == [true, nil, nil, nil])
            #expect(
                frames[2].instructionAddr == "0x5010" && frames[2].lineno == 12 && frames[2].filename == "Shop.swift")
            #expect(frames[2].package == "/srv/shop" && frames[2].imageAddr == "0x5000")
            let threads = try #require(event.threads?.values)
            #expect(threads.map(\.id) == [42, 43] && threads.map(\.crashed) == [true, false])
            #expect(threads[0].stacktrace == nil && threads[1].stacktrace?.frames.count == 1)
            let image = try #require(event.debugMeta?.images.first)
            #expect(
                image.codeID == "b0b1b2b3b4b5b6b7b8b9" && image.imageSize == 0x4000 && image.codeFile == "/srv/shop")
            #expect(image.debugID == "b3b2b1b0-b5b4-b7b6-b8b9-000000000000")
            let crumbs = try #require(event.breadcrumbs?.values)
            #expect(
                crumbs[0].category == "shop.db" && crumbs[0].level == "warning"
                    && crumbs[0].message == "slow query ms=900")
            #expect(crumbs[0].timestamp == 1_795_683_600.25)
            #expect(crumbs[1].message == "not a log line" && crumbs[1].timestamp == nil)
            #expect(event.transaction == "/items/{id}" && event.request?.method == "GET")
            #expect(event.tags?["tenant"] == "acme" && event.tags?["request_id"] == "r-7")
            #expect(event.contexts?["trace"]?["trace_id"] == .string("ab12"))
            #expect(event.contexts?["os"]?["kernel_version"] == .string("6.1"))
        }

        @Test func nonFatalsAreHandledErrorsAndOnlyOOMTerminationsAreEvents() throws {
            let nonfatal = try #require(
                SentryEvent(report: Fixtures.report(kind: .nonfatal), release: "r", environment: nil))
            #expect(nonfatal.level == "error" && nonfatal.exception?.values.first?.mechanism?.handled == true)
            #expect(nonfatal.release == "r")
            // Sentry refuses a release with a slash or a control character: they become dashes.
            let awkward = SentryEvent(
                report: Fixtures.report(kind: .nonfatal, app: "shop/api\tv2"), release: nil, environment: nil)
            #expect(awkward?.release == "shop-api-v2@1.2+7")
            var killed = Fixtures.report(kind: .termination)
            killed.termination = .init(cause: "unknown", lastSeenAlive: Date(), detectedAt: Date())
            #expect(SentryEvent(report: killed, release: nil, environment: nil) == nil)
            killed.termination?.cause = "oom-killer"
            let oom = try #require(SentryEvent(report: killed, release: nil, environment: nil))
            #expect(oom.level == "fatal" && oom.exception?.values.first?.type == "OutOfMemory")
        }

        @Test func hangsAndCapturedErrorsAreHandledEventsOfTheirOwnKind() throws {
            var hang = Fixtures.report(kind: .hang)
            hang.reason = "the main loop missed its 1 s deadline by 2 s"
            hang.threads = [.init(id: 42, name: "main", crashed: true, frameSource: "libunwind", frames: [])]
            let hangEvent = try #require(SentryEvent(report: hang, release: nil, environment: nil))
            let hangException = try #require(hangEvent.exception?.values.first)
            #expect(hangEvent.level == "error" && hangException.type == "AppHang")
            #expect(hangException.mechanism?.type == "AppHang" && hangException.mechanism?.handled == true)
            #expect(
                hangEvent.threads?.values.first?.crashed == false && hangEvent.threads?.values.first?.current == true)

            var error = Fixtures.report(kind: .error)
            error.metadata["error.type"] = "PaymentError"
            error.reason = "PaymentError: card declined"
            let errorEvent = try #require(SentryEvent(report: error, release: nil, environment: nil))
            let errorException = try #require(errorEvent.exception?.values.first)
            #expect(errorException.type == "PaymentError" && errorException.value == "PaymentError: card declined")
            #expect(errorException.mechanism?.type == "blackbox.capture" && errorException.mechanism?.handled == true)
            error.metadata.merge([
                "error.site.file": "shop/Payments.swift", "error.site.line": "42",
                "error.site.function": "charge(card:)",
            ]) { _, new in new }
            let sited = try #require(
                SentryEvent(report: error, release: nil, environment: nil)?.exception?.values.first?.stacktrace?.frames
                    .last)
            #expect(
                sited.function == "charge(card:)" && sited.filename == "Payments.swift"
                    && sited.absPath == "shop/Payments.swift" && sited.lineno == 42 && sited.inApp == true,
                "the throw site is the innermost frame, the app's: \(sited)")

            var debugTrap = Fixtures.report(kind: .crash)
            debugTrap.fatalMessage = "Shop/Cart.swift:12: Fatal error: Unexpectedly found nil while unwrapping"
            debugTrap.reason = debugTrap.fatalMessage
            let trap = try #require(
                SentryEvent(report: debugTrap, release: nil, environment: nil)?.exception?.values.first)
            #expect(trap.type == "Fatal error" && trap.value == "Unexpectedly found nil while unwrapping")
        }

        @Test func anEventLargerThanSentryTakesIsTrimmedFromTheOtherThreadsFirst() throws {
            var report = Self.crash()
            let name =
                "shop.Handler.process(request: Shop.Request, context: Shop.Context) async throws -> Shop.Response"
            let deep = (0..<128).map { index in
                var frame = CrashReport.Frame(index: index, address: "0x5\(index)", imageIndex: 0, imageOffset: "0x1")
                frame.symbols = [.init(function: name + String(index), file: "/src/Handler.swift", line: index)]
                return frame
            }
            report.threads =
                [report.threads![0]]
                + (0..<256).map {
                    .init(id: Int32(100 + $0), name: "worker", crashed: false, frameSource: "libunwind", frames: deep)
                }
            let writer = SentryEnvelopeWriter(release: nil, environment: nil, app: report.app)
            let envelope = try #require(try writer.event(report, logTail: nil))
            let payload = try #require(envelope.items.first { $0.type == "event" }?.payload)
            #expect(payload.count <= SentryEnvelopeWriter.maxEventBytes)
            let event = try JSONDecoder().decode(SentryEvent.self, from: Data(payload))
            #expect(event.tags?["blackbox.trimmed"] == "true")
            #expect(event.threads?.values.count == 257, "every thread is still listed")
            #expect(event.exception?.values.first?.stacktrace?.frames.count == 4, "the crashed thread's stack is whole")
        }

        @Test func archivesGoAsStructuredLogsOnceWhenAsked() async throws {
            let scratch = TemporaryDirectory()
            defer { scratch.remove() }
            var configuration = BlackboxConfiguration(appName: "shop", directory: scratch.path)
            configuration.appVersion = "1.2"
            configuration.sinks = [.file]
            configuration.crashReporting.enabled = false
            // The archives below have fixed dates: aging (its first pass races with the test) would
            // delete them once they are older than the default limit.
            configuration.retention.maxAge = nil
            let core = try LoggingCore(configuration: configuration)
            defer { core.shutdown() }
            let context = DeliveryContext(configuration: configuration, core: core)
            let lines = (0..<150).map { "2026-11-26T09:00:00.\(100 + $0)Z WARN  shop.db: slow query number=\($0)" }
            scratch.write(
                "logs/shop.20261126T090000.000Z--20261126T100000.000Z.log",
                lines.prefix(50).joined(separator: "\n") + "\n")
            scratch.write(
                "logs/shop.20261126T100000.000Z--20261126T110000.000Z.log.gz",
                Data(
                    try GzipData.compress(Array((lines.dropFirst(50).joined(separator: "\n") + "\nnot a line\n").utf8)))
            )

            let server = try await StubCollector.start(script: [])
            var delivery = try SentryDelivery(dsn: "http://k@127.0.0.1:\(server.port)/42")
            delivery.structuredLogs = true
            let first = try #require(await delivery.runPass(context))
            #expect(await delivery.runPass(context) == nil, "each archive is sent once")
            await server.stop()
            #expect(first.uploaded == 2, "one envelope per archive (50 and 100 records)")
            var bodies: [String] = []
            for request in server.received {
                let envelope = try GzipData.decompress(request.body, limit: 1 << 24)
                #expect(SentryEnvelope.itemTypes(of: envelope) == ["log"])
                let text = String(decoding: envelope, as: UTF8.self)
                #expect(text.contains("\"content_type\":\"application/vnd.sentry.items.log+json\""))
                bodies += text.components(separatedBy: "\"body\":\"").dropFirst().map {
                    String($0.prefix { $0 != "\"" })
                }
                #expect(
                    text.contains("\"level\":\"warn\"")
                        && text.contains("\"logger.name\":{\"type\":\"string\",\"value\":\"shop.db\"}"))
            }
            #expect(
                bodies.count == 150 && bodies.first == "slow query number=0" && bodies.last == "slow query number=149")
        }

        func spoolEnvelope(_ spool: Spool, types: [String], age: TimeInterval) throws -> String {
            let envelope = SentryEnvelope(
                eventID: "e", items: types.map { .init(type: $0, payload: Data("{\"x\":1}".utf8)) })
            let path = "\(spool.directory)/\(UUID().uuidString.lowercased()).envelope"
            try FileManager.default.createDirectory(atPath: spool.directory, withIntermediateDirectories: true)
            try Data(envelope.encoded()).write(to: URL(fileURLWithPath: path))
            try FileManager.default.setAttributes(
                [.modificationDate: Date().addingTimeInterval(-age)], ofItemAtPath: path)
            return path
        }

        @Test func aRateLimitHoldsBackOnlyTheNamedCategories() async throws {
            let scratch = TemporaryDirectory()
            defer { scratch.remove() }
            let spool = Spool.sentry(diagnosticsDirectory: scratch.path)
            let firstEvent = try spoolEnvelope(spool, types: ["event", "attachment"], age: 30)
            let sessions = try spoolEnvelope(spool, types: ["sessions"], age: 20)
            let secondEvent = try spoolEnvelope(spool, types: ["event"], age: 10)
            let server = try await StubCollector.start(script: [
                .init(
                    status: 429, body: "{}",
                    headers: ["X-Sentry-Rate-Limits": "60:error;transaction:organization:quota"]),
                .init(status: 200, body: "{}"),
            ])
            let client = SentryClient(dsn: try SentryDSN("http://k@127.0.0.1:\(server.port)/42"))
            let summary = await SpoolUploader(spool: spool, transport: client).drain()
            await server.stop()
            #expect(summary.uploaded == 1 && summary.deferred == 2 && summary.stoppedBy == nil)
            // The second event was never sent: its category was known to be limited.
            #expect(server.received.count == 2)
            #expect(spool.pending().map(\.path) == [firstEvent, secondEvent])
            #expect(!FileManager.default.fileExists(atPath: sessions))
            #expect(client.rateLimits.limitedUntil("error") != nil && client.rateLimits.limitedUntil("session") == nil)
        }

        @Test func aClientReportGoesOutWhileEveryOtherCategoryIsLimited() async throws {
            let scratch = TemporaryDirectory()
            defer { scratch.remove() }
            let spool = Spool.sentry(diagnosticsDirectory: scratch.path)
            let event = try spoolEnvelope(spool, types: ["event"], age: 30)
            let report = try spoolEnvelope(spool, types: ["client_report"], age: 20)
            // The collector's answer over a project's quota: every category but `internal`.
            let server = try await StubCollector.start(script: [
                .init(
                    status: 429, body: "{}",
                    headers: ["X-Sentry-Rate-Limits": "3600:default;error;session;log_item:organization:quota_exceeded"]
                ),
                .init(status: 200, body: "{}"),
            ])
            let client = SentryClient(dsn: try SentryDSN("http://k@127.0.0.1:\(server.port)/42"))
            let summary = await SpoolUploader(spool: spool, transport: client).drain()
            await server.stop()
            #expect(summary.uploaded == 1 && summary.deferred == 1, "\(summary)")
            #expect(server.received.count == 2)
            #expect(spool.pending().map(\.path) == [event])
            #expect(!FileManager.default.fileExists(atPath: report))
        }

        @Test func a429WithoutCategoriesHoldsBackEverythingForItsRetryAfter() async throws {
            let scratch = TemporaryDirectory()
            defer { scratch.remove() }
            let spool = Spool.sentry(diagnosticsDirectory: scratch.path)
            _ = try spoolEnvelope(spool, types: ["event"], age: 20)
            _ = try spoolEnvelope(spool, types: ["sessions"], age: 10)
            let server = try await StubCollector.start(script: [
                .init(status: 429, body: "{}", headers: ["Retry-After": "120"])
            ])
            let client = SentryClient(dsn: try SentryDSN("http://k@127.0.0.1:\(server.port)/42"))
            let summary = await SpoolUploader(spool: spool, transport: client).drain()
            await server.stop()
            #expect(summary.deferred == 2 && server.received.count == 1 && spool.pending().count == 2)
            let until = try #require(client.rateLimits.limitedUntil("session"))
            #expect(until - .now > .seconds(100))
        }

        @Test func envelopesGoGzippedWithTheDSNKey() async throws {
            let scratch = TemporaryDirectory()
            defer { scratch.remove() }
            let spool = Spool.sentry(diagnosticsDirectory: scratch.path)
            let path = try spoolEnvelope(spool, types: ["event"], age: 0)
            let original = try Array(Data(contentsOf: URL(fileURLWithPath: path)))
            let server = try await StubCollector.start(script: [.init(status: 200, body: "{}")])
            let client = SentryClient(dsn: try SentryDSN("http://pub_key@127.0.0.1:\(server.port)/42"))
            let summary = await SpoolUploader(spool: spool, transport: client).drain()
            await server.stop()
            #expect(summary.uploaded == 1 && spool.pending().isEmpty)
            let request = try #require(server.received.first)
            #expect(request.path == "/api/42/envelope/" && request.method == "POST")
            #expect(request.headers["content-encoding"] == "gzip")
            #expect(request.headers["x-sentry-auth"]?.contains("sentry_key=pub_key") == true)
            #expect(try GzipData.decompress(request.body, limit: 1 << 20) == original)
        }

        /// Security review 2026-11-27, info: a DSN server that answers 307 must not get the envelope
        /// re-posted wherever it points (https to http included, with `X-Sentry-Auth`).
        @Test func aRedirectIsNotFollowed() async throws {
            let scratch = TemporaryDirectory()
            defer { scratch.remove() }
            let spool = Spool.sentry(diagnosticsDirectory: scratch.path)
            _ = try spoolEnvelope(spool, types: ["event"], age: 0)
            let elsewhere = try await StubCollector.start(script: [.init(status: 200, body: "{}")])
            let server = try await StubCollector.start(script: [
                .init(status: 307, body: "", headers: ["Location": "\(elsewhere.baseURL)/api/42/envelope/"])
            ])
            let client = SentryClient(dsn: try SentryDSN("http://k@127.0.0.1:\(server.port)/42"))
            var retry = RetryPolicy()
            retry.maxAttempts = 1
            var uploader = SpoolUploader(spool: spool, transport: client, retry: retry)
            uploader.sleep = { _ in }
            let summary = await uploader.drain()
            await server.stop()
            await elsewhere.stop()
            #expect(server.received.count == 1 && elsewhere.received.isEmpty)
            #expect(summary.uploaded == 0 && spool.pending().count == 1)
        }

        @Test func refusedEnvelopesAreKeptAsideAndABadKeyStopsThePass() async throws {
            let scratch = TemporaryDirectory()
            defer { scratch.remove() }
            let spool = Spool.sentry(diagnosticsDirectory: scratch.path)
            _ = try spoolEnvelope(spool, types: ["event"], age: 20)
            _ = try spoolEnvelope(spool, types: ["event"], age: 10)
            let server = try await StubCollector.start(script: [
                .init(status: 400, body: "{\"detail\":\"bad\"}"), .init(status: 401, body: "{}"),
            ])
            let client = SentryClient(dsn: try SentryDSN("http://k@127.0.0.1:\(server.port)/42"))
            let summary = await SpoolUploader(spool: spool, transport: client).drain()
            await server.stop()
            #expect(summary.rejected == 1 && spool.rejected().count == 1 && spool.pending().count == 1)
            guard case .unauthorized = summary.stoppedBy else {
                Issue.record("the pass should stop at the 401, got \(String(describing: summary.stoppedBy))")
                return
            }
        }

        /// A running logging core on a diagnostics directory with a crash and a non-fatal report and
        /// one ended run.
        func app(_ scratch: TemporaryDirectory) throws -> DeliveryContext {
            var configuration = BlackboxConfiguration(appName: "shop", directory: scratch.path)
            configuration.appVersion = "1.2"
            configuration.sinks = [.file]
            configuration.crashReporting.enabled = false
            let core = try LoggingCore(configuration: configuration)
            Logger(label: "test") { BlackboxLogHandler(label: $0, core: core) }.info("before the crash")
            try Fixtures.outboxReport(in: scratch, kind: .crash)
            try Fixtures.outboxReport(in: scratch, kind: .nonfatal)
            let ended = EndedSession(
                appVersion: "1.2", startTime: Date().addingTimeInterval(-60), endTime: Date(), outcome: .crashed)
            scratch.write(
                "runs/ended/\(EndedSession.fileName(startTime: ended.startTime, pid: 7))",
                try JSONEncoder().encode(ended))
            return DeliveryContext(configuration: configuration, core: core)
        }

        @Test("what the server refused is counted, and the next pass sends the counts as a client report, once")
        func refusalsBecomeAClientReport() async throws {
            let scratch = TemporaryDirectory()
            defer { scratch.remove() }
            let context = try app(scratch)
            defer { context.core.shutdown() }
            let spool = Spool.sentry(diagnosticsDirectory: scratch.path)
            // Three envelopes (the two reports, the run counts): the first is refused as too large.
            let refusing = try await StubCollector.start(script: [.init(status: 413, body: "{}")])
            let delivery = try SentryDelivery(dsn: "http://k@127.0.0.1:\(refusing.port)/42")
            let first = try #require(await delivery.runPass(context))
            await refusing.stop()
            #expect(first.rejected == 1 && first.uploaded == 2, "\(first)")
            let ledger = DeliveryLosses(spool: spool, appVersion: "1.2", category: "error")
            #expect(
                ledger.pending == [DeliveryLoss(appVersion: "1.2", category: "error", reason: "too_large", quantity: 1)]
            )

            // The next pass has nothing new but the counts: one envelope of one client report, which is
            // itself refused here, and that refusal is not counted again.
            let server = try await StubCollector.start(script: [.init(status: 400, body: "{}")])
            let retrying = try SentryDelivery(dsn: "http://k@127.0.0.1:\(server.port)/42")
            let second = try #require(await retrying.runPass(context))
            await server.stop()
            #expect(second.rejected == 1 && server.received.count == 1)
            let body = try GzipData.decompress(try #require(server.received.first).body, limit: 1 << 20)
            let envelope = try SentryEnvelope(parsing: Data(body))
            #expect(envelope.items.map(\.type) == ["client_report"])
            #expect(envelope.header.trace?.release == "shop@1.2", "the release a client report has no field for")
            let item = try #require(envelope.items.first)
            let report = try #require(try JSONSerialization.jsonObject(with: item.payload) as? [String: Any])
            let discarded = report["discarded_events"] as? [[String: Any]] ?? []
            let loss = try #require(discarded.first)
            #expect(discarded.count == 1 && loss["reason"] as? String == "too_large", "\(report)")
            #expect(loss["category"] as? String == "error" && loss["quantity"] as? Int == 1, "\(loss)")
            #expect(ledger.pending.isEmpty, "sent, and its own refusal not counted")
            #expect(await retrying.runPass(context) == nil, "nothing left to send")
        }

        @Test func aPassTurnsTheOutboxIntoEnvelopesAndKeepsThemUntilAccepted() async throws {
            let scratch = TemporaryDirectory()
            defer { scratch.remove() }
            let context = try app(scratch)
            defer { context.core.shutdown() }
            // Nobody listens yet: the envelopes wait in the spool, the outbox is emptied.
            var offline = try SentryDelivery(dsn: "http://k@127.0.0.1:1/42")
            offline.retry.maxAttempts = 1
            let first = try #require(await offline.runPass(context))
            #expect(first.uploaded == 0 && first.stoppedBy != nil)
            #expect(scratch.files(in: "outbox").filter { $0.hasSuffix(".json") }.isEmpty)
            #expect(Spool.sentry(diagnosticsDirectory: scratch.path).pending().count == 3)

            let server = try await StubCollector.start(script: [])
            let delivery = try SentryDelivery(dsn: "http://k@127.0.0.1:\(server.port)/42")
            let second = try #require(await delivery.runPass(context))
            await server.stop()
            #expect(second.uploaded == 3 && Spool.sentry(diagnosticsDirectory: scratch.path).pending().isEmpty)
            let envelopes = try server.received.map { try GzipData.decompress($0.body, limit: 1 << 24) }
            let types = envelopes.compactMap(SentryEnvelope.itemTypes).sorted { $0.count > $1.count }
            #expect(types == [["event", "attachment"], ["event"], ["sessions"]])
            let sessions = try #require(envelopes.first { SentryEnvelope.itemTypes(of: $0) == ["sessions"] })
            let text = String(decoding: sessions, as: UTF8.self)
            #expect(text.contains("\"release\":\"shop@1.2\"") && text.contains("\"crashed\":1"))
            let crash = try #require(envelopes.first { SentryEnvelope.itemTypes(of: $0) == ["event", "attachment"] })
            #expect(String(decoding: crash, as: UTF8.self).contains("before the crash"))
        }
    }
#endif
