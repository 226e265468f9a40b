#if Upload
    import Blackbox
    import BlackboxFormat
    import BlackboxTestSupport
    import Foundation
    import Logging
    import Synchronization
    import Testing
    import ZIPFoundation

    @testable import BlackboxUpload

    @Suite struct CollectorUploadTests {
        /// A running logging core on a diagnostics directory with two outbox reports and one archive.
        func app(_ scratch: TemporaryDirectory) throws -> DeliveryContext {
            var configuration = BlackboxConfiguration(appName: "shop", directory: scratch.path)
            configuration.sinks = [.file]
            configuration.crashReporting.enabled = false
            // The archives below have fixed dates: aging (its first pass races with the test) would
            // delete them once they are older than the default limit.
            configuration.retention.maxAge = nil
            let core = try LoggingCore(configuration: configuration)
            Logger(label: "test") { BlackboxLogHandler(label: $0, core: core) }.info("before the crash")
            try Fixtures.outboxReport(in: scratch, kind: .crash)
            try Fixtures.outboxReport(in: scratch, kind: .nonfatal)
            scratch.write("logs/shop.20261121T100000.000Z--20261121T110000.000Z.log", "archived line\n")
            return DeliveryContext(configuration: configuration, core: core)
        }

        @Test func nothingIsBundledOrSentWithoutConsent() async throws {
            let scratch = TemporaryDirectory()
            defer { scratch.remove() }
            let context = try app(scratch)
            defer { context.core.shutdown() }
            let server = try await StubCollector.start()
            defer { Task { await server.stop() } }
            let asked = Mutex<[ConsentRequest]>([])
            let upload = CollectorUpload(
                endpoint: try CollectorEndpoint(url: server.baseURL, key: "k"),
                consent: .ask { request in
                    asked.withLock { $0.append(request) }
                    return false
                })
            #expect(await upload.runPass(context) == nil)
            let request = try #require(asked.withLock { $0.first })
            #expect(request.reports == 2 && request.waitingBundles == 0)
            #expect(request.logFiles == 2)  // the archive and the active file's new lines (shipped live)
            #expect(server.received.isEmpty)
            #expect(scratch.files(in: "outbox").filter { $0.hasSuffix(".json") }.count == 2)
            #expect(scratch.files(in: "outbox/bundles").filter { $0.hasSuffix(".zip") }.isEmpty)

            let never = CollectorUpload(endpoint: try CollectorEndpoint(url: server.baseURL, key: "k"), consent: .never)
            #expect(await never.runPass(context) == nil)
            #expect(server.received.isEmpty)
        }

        @Test func aPassBundlesTheOutboxAndUploadsIt() async throws {
            let scratch = TemporaryDirectory()
            defer { scratch.remove() }
            let context = try app(scratch)
            defer { context.core.shutdown() }
            let server = try await StubCollector.start()
            let upload = CollectorUpload(endpoint: try CollectorEndpoint(url: server.baseURL, key: "k"))
            let summary = try #require(await upload.runPass(context))
            await server.stop()
            // The reports and the archive in one bundle, the active file's new lines in a live segment.
            #expect(summary.uploaded == 2 && summary.stoppedBy == nil)
            #expect(server.received.count == 2)
            #expect(scratch.files(in: "outbox").filter { $0.hasSuffix(".json") || $0.hasSuffix(".txt") }.isEmpty)
            #expect(scratch.files(in: "outbox/bundles").filter { $0.hasSuffix(".zip") }.isEmpty)
            // A second pass has nothing new to send.
            #expect(await upload.runPass(context) == nil)
        }

        @Test(
            "a refused bundle is counted; the counts go in a bundle of their own (format 4), whose refusal is not counted"
        )
        func refusalsGoInABundleOfTheirOwn() async throws {
            let scratch = TemporaryDirectory()
            defer { scratch.remove() }
            let context = try app(scratch)
            defer { context.core.shutdown() }
            let spool = Spool(diagnosticsDirectory: scratch.path)
            let refusing = try await StubCollector.start(script: [.init(status: 413, body: "{}")])
            let first = try #require(
                await CollectorUpload(endpoint: try CollectorEndpoint(url: refusing.baseURL, key: "k")).runPass(context)
            )
            await refusing.stop()
            #expect(first.rejected == 1, "\(first)")
            let ledger = DeliveryLosses(spool: spool, appVersion: nil, category: "bundle")
            #expect(ledger.pending == [DeliveryLoss(category: "bundle", reason: "too_large", quantity: 1)])

            // With the collector unreachable, the counts wait in the spool as a bundle of their own.
            var offline = CollectorUpload(endpoint: try CollectorEndpoint(url: "http://127.0.0.1:9", key: "k"))
            offline.retry.maxAttempts = 1
            _ = await offline.runPass(context)
            #expect(ledger.pending.isEmpty)
            let manifests = try spool.pending().map { bundle in
                let archive = try Archive(url: URL(fileURLWithPath: bundle.path), accessMode: .read)
                var json = Data()
                _ = try archive.extract(try #require(archive["manifest.json"])) { json.append($0) }
                return try BundleManifest.decode(json)
            }
            let carrier = try #require(manifests.first { $0.losses != nil }, "\(manifests)")
            #expect(carrier.formatVersion == 4 && carrier.entries.isEmpty)
            #expect(carrier.losses == [DeliveryLoss(category: "bundle", reason: "too_large", quantity: 1)])

            // Refused in turn (a collector too old for format 4): not counted again.
            let old = try await StubCollector.start(script: [.init(status: 400, body: "{}")])
            let third = try #require(
                await CollectorUpload(endpoint: try CollectorEndpoint(url: old.baseURL, key: "k")).runPass(context))
            await old.stop()
            #expect(third.rejected == 1 && ledger.pending.isEmpty, "\(third)")
        }

        /// Security review 2026-11-27, finding 9: with the collector unreachable, each pass cut the
        /// active log into the spool, which grew without end.
        @Test func whileTheCollectorIsUnreachableTheSpoolKeepsToTheRetentionsBytesAndKeepsTheReports()
            async throws
        {
            let scratch = TemporaryDirectory()
            defer { scratch.remove() }
            var context = try app(scratch)
            defer { context.core.shutdown() }
            context.configuration.retention.maxTotalBytes = 48 << 10
            let logger = Logger(label: "test") { BlackboxLogHandler(label: $0, core: context.core) }
            // Nothing listens on port 9 (discard): every upload fails at once.
            var upload = CollectorUpload(endpoint: try CollectorEndpoint(url: "http://127.0.0.1:9", key: "k"))
            upload.retry.maxAttempts = 1  // each pass tries once and leaves the spool, as the CLI's do
            for pass in 0..<6 {
                for line in 0..<600 {
                    logger.info(
                        "pass \(pass) line \(line) \(String(repeating: "x", count: 40)) \(UInt64.random(in: 0...UInt64.max))"
                    )
                }
                _ = await upload.runPass(context)
            }
            let spool = Spool(diagnosticsDirectory: scratch.path)
            let waiting = spool.pending()
            let withReports = waiting.filter { spool.holdsReports($0) }
            #expect(withReports.count == 1, "the bundle of the two reports and the archive is kept")
            let total = waiting.reduce(Int64(0)) { $0 + $1.size }
            #expect(total <= 48 << 10, "\(waiting.count) files, \(total) bytes")
            #expect(waiting.count > withReports.count, "the newest log segments are kept within the cap")
        }

        @Test func runStartsWithAPass() async throws {
            let scratch = TemporaryDirectory()
            defer { scratch.remove() }
            let server = try await StubCollector.start()
            try Fixtures.outboxReport(in: scratch, kind: .crash)
            var configuration = BlackboxConfiguration(appName: "shop", directory: scratch.path)
            configuration.sinks = [.file]
            configuration.crashReporting.enabled = false
            configuration.delivery = CollectorUpload(endpoint: try CollectorEndpoint(url: server.baseURL, key: "k"))
            let core = try LoggingCore(configuration: configuration)
            defer { core.shutdown() }
            let delivery = try #require(configuration.delivery)
            let (events, announcer) = AsyncStream.makeStream(of: DeliveryEvent.self)
            defer { announcer.finish() }
            let running = Task {
                await delivery.run(DeliveryContext(configuration: configuration, core: core), events: events)
            }
            let deadline = ContinuousClock.now + .seconds(120)
            while server.received.isEmpty && ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(50))
            }
            running.cancel()
            await running.value
            await server.stop()
            #expect(server.received.count == 1)
        }

        @Test func cancellingEndsTheLoopMidBackoffLosesNothingAndALaterRunBeginsAgain() async throws {
            let scratch = TemporaryDirectory()
            defer { scratch.remove() }
            // The collector answers 503 first: the pass waits out a long backoff when stop comes.
            let server = try await StubCollector.start(answers: [(503, "{}")])
            defer { Task { await server.stop() } }
            try Fixtures.outboxReport(in: scratch, kind: .crash)
            var configuration = BlackboxConfiguration(appName: "shop", directory: scratch.path)
            configuration.sinks = [.file]
            configuration.crashReporting.enabled = false
            var settings = CollectorUpload(endpoint: try CollectorEndpoint(url: server.baseURL, key: "k"))
            settings.retry.initialDelay = .seconds(3600)
            settings.retry.maxDelay = .seconds(3600)
            let upload = settings
            configuration.delivery = upload
            let core = try LoggingCore(configuration: configuration)
            defer { core.shutdown() }
            let context = DeliveryContext(configuration: configuration, core: core)
            let (events, announcer) = AsyncStream.makeStream(of: DeliveryEvent.self)
            defer { announcer.finish() }
            let first = Task { await upload.run(context, events: events) }
            // Bounds for liveness only (the backoff is an hour): generous, because a fresh clone's CI runs
            // under load, where a first pass once took over 20 s to reach the collector.
            let deadline = ContinuousClock.now + .seconds(120)
            while server.received.isEmpty && ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(20))
            }
            try #require(server.received.count == 1, "the first attempt reached the collector")

            first.cancel()
            let ended = await withTaskGroup(of: Bool.self) { group in
                group.addTask {
                    await first.value
                    return true
                }
                group.addTask {
                    try? await Task.sleep(for: .seconds(120))
                    return false
                }
                defer { group.cancelAll() }
                return await group.next() ?? false
            }
            #expect(ended, "the loop ended without waiting out its hour of backoff")
            #expect(Spool(diagnosticsDirectory: scratch.path).pending().count == 1, "the bundle waits in the spool")

            let again = Task { await upload.run(context, events: events) }
            let second = ContinuousClock.now + .seconds(120)
            while server.received.count < 2 && ContinuousClock.now < second {
                try await Task.sleep(for: .milliseconds(20))
            }
            #expect(server.received.count == 2, "a start after stop runs a pass again")
            #expect(server.received.map(\.uploadID) == [server.received[0].uploadID, server.received[0].uploadID])
            again.cancel()
            await again.value
        }
    }
#endif
