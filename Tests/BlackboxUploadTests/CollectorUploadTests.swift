import Blackbox
import Foundation
import Logging
import Synchronization
import Testing

@testable import BlackboxUpload

@Suite struct CollectorUploadTests {
    /// A running logging core on a diagnostics directory with two outbox reports and one archive.
    func app(_ scratch: Scratch) throws -> DeliveryContext {
        var configuration = BlackboxConfiguration(appName: "shop", directory: scratch.path)
        configuration.sinks = [.file]
        configuration.crashReporting.enabled = false
        let core = try LoggingCore(configuration: configuration)
        Logger(label: "test") { BlackboxLogHandler(label: $0, core: core) }.info("before the crash")
        try Fixtures.outboxReport(in: scratch, kind: .crash)
        try Fixtures.outboxReport(in: scratch, kind: .nonfatal)
        scratch.write("logs/shop.20261121T100000.000Z--20261121T110000.000Z.log", "archived line\n")
        return DeliveryContext(configuration: configuration, core: core)
    }

    @Test func nothingIsBundledOrSentWithoutConsent() async throws {
        let scratch = Scratch()
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
        #expect(request.logFiles == 2)  // the archive and the active file's end (there are reports)
        #expect(server.received.isEmpty)
        #expect(scratch.files(in: "outbox").filter { $0.hasSuffix(".json") }.count == 2)
        #expect(scratch.files(in: "outbox/bundles").filter { $0.hasSuffix(".zip") }.isEmpty)

        let never = CollectorUpload(endpoint: try CollectorEndpoint(url: server.baseURL, key: "k"), consent: .never)
        #expect(await never.runPass(context) == nil)
        #expect(server.received.isEmpty)
    }

    @Test func aPassBundlesTheOutboxAndUploadsIt() async throws {
        let scratch = Scratch()
        defer { scratch.remove() }
        let context = try app(scratch)
        defer { context.core.shutdown() }
        let server = try await StubCollector.start()
        let upload = CollectorUpload(endpoint: try CollectorEndpoint(url: server.baseURL, key: "k"))
        let summary = try #require(await upload.runPass(context))
        await server.stop()
        #expect(summary.uploaded == 1 && summary.stoppedBy == nil)
        #expect(server.received.count == 1)
        #expect(scratch.files(in: "outbox").filter { $0.hasSuffix(".json") || $0.hasSuffix(".txt") }.isEmpty)
        #expect(scratch.files(in: "outbox/bundles").filter { $0.hasSuffix(".zip") }.isEmpty)
        // A second pass has nothing new to send.
        #expect(await upload.runPass(context) == nil)
    }

    @Test func startedRunsAPassInTheBackgroundAfterStart() async throws {
        let scratch = Scratch()
        defer { scratch.remove() }
        let server = try await StubCollector.start()
        try Fixtures.outboxReport(in: scratch, kind: .crash)
        var configuration = BlackboxConfiguration(appName: "shop", directory: scratch.path)
        configuration.sinks = [.file]
        configuration.crashReporting.enabled = false
        configuration.delivery = CollectorUpload(endpoint: try CollectorEndpoint(url: server.baseURL, key: "k"))
        let core = try LoggingCore(configuration: configuration)
        defer { core.shutdown() }
        configuration.delivery?.started(DeliveryContext(configuration: configuration, core: core))
        let deadline = ContinuousClock.now + .seconds(20)
        while server.received.isEmpty && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(50)) }
        await server.stop()
        #expect(server.received.count == 1)
    }
}
