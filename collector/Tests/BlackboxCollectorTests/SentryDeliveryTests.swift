import BlackboxFormat
import BlackboxTestSupport
import Foundation
import Testing

@testable import BlackboxCollector

/// Issue 35 against Blackbox's own collector: a release-build crash of the real crash child, sent
/// once as a native bundle and once as Sentry envelopes (`blackbox upload --sentry-dsn`, and the
/// crash-time helper with a DSN), lands in the same group with the same story.
@Suite("Sentry out: Blackbox's reports delivered through the collector's Sentry endpoint")
struct SentryDeliveryTests {
    static var releaseApp: String { CrashTimeDeliveryTests.releaseApp }

    /// A crashed and relaunched release app: its diagnostics directory holds the processed report.
    static func crashedApp(_ scratch: TemporaryDirectory) async throws -> String {
        let diagnostics = "\(scratch.path)/native"
        let crashed = try await Tool.Running(Self.releaseApp, [diagnostics, "index", "main"], environment: [:]).wait()
        #expect(crashed.signal == SIGTRAP || crashed.signal == SIGILL, "\(crashed.status) \(crashed.stderr)")
        let next = try await Tool.Running(Self.releaseApp, [diagnostics, "process-pending", "next"], environment: [:])
            .wait()
        #expect(next.status == 0, "\(next.stderr)")
        return diagnostics
    }

    @Test("one crash, sent as a bundle and as a Sentry event, is one group of two with the same story")
    func bundleAndEnvelopeGroupTogether() async throws {
        try #require(FileManager.default.fileExists(atPath: Self.releaseApp), "no release crash child")
        let scratch = TemporaryDirectory()
        defer { scratch.remove() }
        let native = try await Self.crashedApp(scratch)
        let viaSentry = "\(scratch.path)/sentry"
        try FileManager.default.copyItem(atPath: native, toPath: viaSentry)
        // The copy is a second occurrence: the collector stores a report id once, whatever the protocol.
        let outbox = DiagnosticsDirectory(viaSentry).outbox
        let copied = try #require(
            try FileManager.default.contentsOfDirectory(atPath: outbox).first { $0.hasSuffix(".json") })
        var occurrence = try CrashReport.decode(try Data(contentsOf: URL(fileURLWithPath: "\(outbox)/\(copied)")))
        occurrence.id = UUID()
        try FileManager.default.removeItem(atPath: "\(outbox)/\(copied)")
        try CrashReport.makeEncoder().encode(occurrence).write(
            to: URL(fileURLWithPath: "\(outbox)/crash-\(occurrence.id.uuidString.lowercased()).json"))
        let collector = try await TestCollector.start()
        defer { Task { await collector.stop() } }

        let bundled = try await Tool.run(
            "blackbox", ["upload", native, "--server", collector.baseURL, "--key", collector.ingestKey])
        #expect(bundled.status == 0, "\(bundled.stderr)")
        let dsn = SentryIngestTests.dsn(collector)
        let sent = try await Tool.run("blackbox", ["upload", viaSentry, "--sentry-dsn", dsn])
        #expect(sent.status == 0, "\(sent.stderr)")
        #expect(sent.stdout.contains("uploaded 2 envelopes"), "the event and the run counts: \(sent.stdout)")
        let spooled = (try? FileManager.default.contentsOfDirectory(atPath: DiagnosticsDirectory(viaSentry).sentrySpool)) ?? []
        #expect(!spooled.contains { $0.hasSuffix(".envelope") }, "\(spooled)")

        let groups = try await HTTP.get(collector, "/api/v1/groups").json["items"] as? [[String: Any]] ?? []
        #expect(groups.count == 1, "\(groups.map { $0["title"] ?? "" })")
        let group = try #require(groups.first)
        #expect(group["count"] as? Int == 2, "\(group)")
        #expect((group["title"] as? String)?.contains("triggerIndexOutOfRange") == true, "\(group)")

        let reportID = try #require(group["latestReportID"] as? Int)
        let report = try CrashReport.decode(try await HTTP.get(collector, "/api/v1/reports/\(reportID)").body)
        #expect(report.metadata["sentry.sdk"] == "blackbox.swift 0.1.0", "the latest is the Sentry one")
        #expect(report.reason == "Swift runtime failure: Index out of range", "\(report.reason ?? "none")")
        #expect(report.app == .init(name: "crash-child", version: "1.0", build: "42"))
        #expect(report.signal?.name == "SIGILL" || report.signal?.name == "SIGTRAP")
        #expect(report.logTail.contains { $0.contains("about to crash: index on main") }, "\(report.logTail)")
        let threads = try #require(report.threads)
        #expect(threads.count >= 3 && threads.contains { $0.name == "blackbox-writer" }, "\(threads.map(\.name))")
        #expect(report.images.contains { $0.path.hasSuffix("blackbox-crash-child") && $0.buildID != nil })

        let releases = try await HTTP.get(collector, "/api/v1/releases").json["items"] as? [[String: Any]] ?? []
        let release = try #require(releases.first { $0["version"] as? String == "1.0" }, "\(releases)")
        #expect(release["crashed"] as? Int == 2, "each delivery counted the crashed run: \(release)")
    }

    @Test("crash-time delivery to a DSN: the helper builds the report and the collector has it before the next start")
    func crashTimeDeliveryToADSN() async throws {
        try #require(FileManager.default.fileExists(atPath: Self.releaseApp), "no release crash child")
        let scratch = TemporaryDirectory()
        defer { scratch.remove() }
        let collector = try await TestCollector.start()
        defer { Task { await collector.stop() } }
        let diagnostics = "\(scratch.path)/diagnostics"
        let crashed = try await Tool.Running(
            Self.releaseApp, [diagnostics, "index", "main"],
            environment: [
                "CRASH_CHILD_DELIVERY_HELPER": "\(Tool.binDirectory)/blackbox",
                "CRASH_CHILD_DELIVERY_SENTRY_DSN": SentryIngestTests.dsn(collector),
                "CRASH_CHILD_DELIVERY_DEADLINE_MS": "20000",
            ]
        ).wait()
        #expect(crashed.signal == SIGTRAP || crashed.signal == SIGILL, "\(crashed.status) \(crashed.stderr)")
        let pending = DiagnosticsDirectory(diagnostics).pendingCrashes
        let raws = ((try? FileManager.default.contentsOfDirectory(atPath: pending)) ?? []).filter {
            $0.hasSuffix(".raw")
        }
        #expect(raws.isEmpty, "delivered, so the raw report is gone: \(raws) \(crashed.stderr)")
        let groups = try await HTTP.get(collector, "/api/v1/groups").json["items"] as? [[String: Any]] ?? []
        let group = try #require(groups.first, "\(crashed.stderr)")
        #expect((group["title"] as? String)?.contains("triggerIndexOutOfRange") == true, "\(group)")
        let reportID = try #require(group["latestReportID"] as? Int)
        let report = try CrashReport.decode(try await HTTP.get(collector, "/api/v1/reports/\(reportID)").body)
        #expect(report.metadata["sentry.sdk"] == "blackbox.swift 0.1.0")
        #expect(report.logTail.contains { $0.contains("about to crash: index on main") }, "\(report.logTail)")
    }
}
