import BlackboxFormat
import Foundation
import Testing

@testable import BlackboxCollector

/// Issue 47, item 2: the bounds every upload is held to, run against every upload format. The bounds
/// once lived in the zip format's code, and the second format (Sentry) came without them (security
/// review 2026-11-27: 10 M index rows from one request, trees 35 times an item's size, 42 s of CPU
/// for one event). A new format (OTLP) joins `Format` and must pass the same cases.
@Suite("Ingest bounds: one contract for every upload format")
struct IngestBoundsContractTests {
    enum Format: String, CaseIterable, Sendable, CustomTestStringConvertible {
        case zip, sentry
        var testDescription: String { rawValue }
    }

    /// A report as each format carries it: `frames` frames on the failing thread, `padding` bytes of
    /// text besides.
    struct ReportShape {
        var frames = 3
        var padding = 0
    }

    /// An upload of `format` with these reports and logs (each log a number of lines).
    static func body(_ format: Format, reports: [ReportShape], logs: [Int] = []) throws -> Data {
        let logLines = logs.map { count in (0..<count).map { "line \($0) of a log: \(UUID().uuidString)" } }
        switch format {
        case .zip:
            var files: [(String, BundleManifest.Entry.Kind, Data)] = []
            for (number, shape) in reports.enumerated() {
                var report = Reports.crash(functions: (0..<shape.frames).map { "shop.f\($0)() -> ()" })
                if shape.padding > 0 { report.metadata["padding"] = String(repeating: "p", count: shape.padding) }
                files.append(("reports/r\(number).json", .report, try CrashReport.makeEncoder().encode(report)))
            }
            for (number, lines) in logLines.enumerated() {
                files.append(("logs/app\(number).log", .log, Data((lines.joined(separator: "\n") + "\n").utf8)))
            }
            let manifest = BundleManifest(
                app: .init(name: "shop", version: "1.0", build: nil), host: "web-1",
                entries: files.map {
                    .init(path: $0.0, kind: $0.1, size: Int64($0.2.count), sha256: BundleArchive.sha256($0.2))
                })
            return try BundleArchive.zip([("manifest.json", try manifest.encoded())] + files.map { ($0.0, $0.2) })
        case .sentry:
            var text = "{}\n"
            func item(_ type: String, _ payload: String) {
                text += "{\"type\":\"\(type)\",\"length\":\(payload.utf8.count)}\n\(payload)\n"
            }
            for shape in reports {
                let frames = (0..<shape.frames).map {
                    "{\"function\":\"f\($0)\",\"filename\":\"shop/main.swift\",\"lineno\":\($0 + 1),\"in_app\":true}"
                }
                let padding = String(repeating: "p", count: shape.padding)
                item(
                    "event",
                    "{\"event_id\":\"\(UUID().uuidString.lowercased().filter { $0 != "-" })\",\"platform\":\"native\","
                        + "\"release\":\"shop@1.0\",\"extra\":{\"padding\":\"\(padding)\"},"
                        + "\"exception\":{\"values\":[{\"type\":\"ShopError\",\"value\":\"declined\","
                        + "\"stacktrace\":{\"frames\":[\(frames.joined(separator: ","))]}}]}}")
            }
            for lines in logLines {
                let records = lines.map { "{\"timestamp\":1795000000,\"level\":\"info\",\"body\":\"\($0)\"}" }
                item("log", "{\"items\":[\(records.joined(separator: ","))]}")
            }
            return Data(text.utf8)
        }
    }

    static func format(
        _ format: Format, limits: IngestLimits = IngestLimits(), memory: MemoryBudget? = nil,
        pool: InspectionPool = .shared
    ) -> any BundleFormat {
        switch format {
        case .zip:
            var zip = ZipBundleFormat(limits: limits, inspectionMemory: memory)
            zip.pool = pool
            return zip
        case .sentry:
            var sentry = SentryEnvelopeFormat(limits: limits, inspectionMemory: memory)
            sentry.pool = pool
            return sentry
        }
    }

    static func plan(_ bytes: Data, with format: any BundleFormat) async throws -> IngestPlan {
        try await format.inspect(
            ReceivedBody(path: "/nonexistent", sha256: UUID().uuidString, size: bytes.count, bytes: bytes),
            for: .init(
                key: APIKey(id: 1, projectID: 1, kind: .ingest, prefix: "k", createdAt: Date()), uploadID: nil,
                declaredLength: bytes.count),
            receivedAt: Date()
        ).plan
    }

    static func refusal(_ bytes: Data, with format: any BundleFormat) async -> APIError? {
        do {
            _ = try await plan(bytes, with: format)
            return nil
        } catch {
            return error as? APIError
        }
    }

    @Test("an honest upload is planned: its report grouped, its log indexed", arguments: Format.allCases)
    func honestUpload(_ kind: Format) async throws {
        let plan = try await Self.plan(
            try Self.body(kind, reports: [ReportShape()], logs: [20]), with: Self.format(kind))
        #expect(plan.occurrences.count == 1)
        let logs = plan.files.filter { $0.kind == .log }
        #expect(logs.count == 1 && logs.allSatisfy { !$0.skipsIndexing && $0.lineCount >= 20 })
    }

    @Test(
        "what is stored is the report's own encoding, whether the format encoded it or the plan did",
        arguments: Format.allCases)
    func storedJSONIsTheReports(_ kind: Format) async throws {
        for shape in [ReportShape(), ReportShape(frames: 3_000)] {
            let plan = try await Self.plan(try Self.body(kind, reports: [shape]), with: Self.format(kind))
            let json = try #require(plan.occurrences.first).json
            #expect(try CrashReport.makeEncoder().encode(try CrashReport.decode(json)) == json)
        }
    }

    @Test("the plan stores a format's encoding of a report as it is, and encodes a report it had to cut")
    func planReusesTheFormatsEncoding() throws {
        var small = Reports.crash(functions: ["shop.f() -> ()"])
        small.id = UUID()
        var large = Reports.crash(functions: (0..<3_000).map { "shop.f\($0)() -> ()" })
        large.id = UUID()
        let marker = Data(#"{"encoded":"by the format"}"#.utf8)
        var new = NewBundle(
            projectID: 1, uploadID: nil, sha256: "00", size: 1, blob: "00.envelope", manifest: nil, files: [],
            reports: [small, large], receivedAt: Date())
        new.encodedReports = [marker, marker]
        let plan = try IngestPlan(new, bounds: IngestBounds(IngestLimits()))
        #expect(plan.occurrences.map(\.json.count).count == 2)
        #expect(plan.occurrences[0].json == marker, "not cut: the format's bytes")
        #expect(
            try CrashReport.decode(plan.occurrences[1].json).frames.count == ReportBounds.maxFrames, "cut: encoded anew"
        )
    }

    @Test("a report larger than maxReportBytes is refused as invalid (422)", arguments: Format.allCases)
    func reportTooLarge(_ kind: Format) async throws {
        var limits = IngestLimits()
        limits.maxReportBytes = 64 << 10
        let refusal = await Self.refusal(
            try Self.body(kind, reports: [ReportShape(padding: 100_000)]), with: Self.format(kind, limits: limits))
        #expect(refusal?.code == "invalid_report" && refusal?.status.code == 422, "\(String(describing: refusal))")
    }

    @Test("reports together larger than maxReportBytesPerBundle are refused (422)", arguments: Format.allCases)
    func reportsTooLargeTogether(_ kind: Format) async throws {
        var limits = IngestLimits()
        limits.maxReportBytesPerBundle = 100 << 10
        let refusal = await Self.refusal(
            try Self.body(kind, reports: Array(repeating: ReportShape(padding: 40_000), count: 3)),
            with: Self.format(kind, limits: limits))
        #expect(refusal?.code == "reports_too_large" && refusal?.status.code == 422, "\(String(describing: refusal))")
    }

    @Test("a report's frames are cut to the crash handler's own bound, and the cut is said", arguments: Format.allCases)
    func framesCut(_ kind: Format) async throws {
        let plan = try await Self.plan(
            try Self.body(kind, reports: [ReportShape(frames: 3_000)]), with: Self.format(kind))
        let stored = try CrashReport.decode(try #require(plan.occurrences.first).json)
        #expect(stored.frames.count <= ReportBounds.maxFrames)
        #expect((stored.omittedFrames?.count ?? 0) >= 3_000 - ReportBounds.maxFrames)
    }

    @Test("logs past the upload's indexing budget are stored but not indexed", arguments: Format.allCases)
    func indexingBudget(_ kind: Format) async throws {
        var limits = IngestLimits()
        limits.maxIndexedLinesPerBundle = 100
        let plan = try await Self.plan(
            try Self.body(kind, reports: [], logs: [80, 80, 10]), with: Self.format(kind, limits: limits))
        let logs = plan.files.filter { $0.kind == .log }
        #expect(logs.map(\.skipsIndexing) == [false, true, false], "\(logs.map(\.lineCount))")
    }

    @Test(
        "with its share of the inspection memory spent, an upload is answered 'resend later' (503); another project's share stays",
        arguments: Format.allCases)
    func memorySpent(_ kind: Format) async throws {
        let memory = MemoryBudget(limit: 8 << 20)
        let upload = try Self.body(kind, reports: [ReportShape(padding: 20_000)])
        #expect(memory.take(memory.perProject - 1_000, project: 1))
        let refusal = await Self.refusal(upload, with: Self.format(kind, memory: memory))
        #expect(refusal?.code == "too_many_uploads" && refusal?.status.code == 503, "\(String(describing: refusal))")
        #expect(refusal?.message.contains("inspected") == true, "the refusal says what is full")
        memory.giveBack(memory.perProject - 1_000, project: 1)
        #expect(memory.inUse == 0, "a refused upload gives back what it took")
        // Another project holding all it may: this project's upload goes through.
        #expect(memory.take(memory.perProject, project: 2))
        _ = try await Self.plan(upload, with: Self.format(kind, memory: memory))
        memory.giveBack(memory.perProject, project: 2)
        #expect(memory.inUse == 0, "a planned upload gives back what it took")
    }

    @Test(
        "a large upload, or one of large reports, is inspected on the inspection pool, not on the request's task",
        arguments: Format.allCases)
    func largeUploadOnThePool(_ kind: Format) async throws {
        let pool = InspectionPool(perProject: 1)
        // Small: read where the request runs.
        _ = try await Self.plan(try Self.body(kind, reports: [], logs: [1]), with: Self.format(kind, pool: pool))
        #expect(pool.completedJobs == 0)
        // Past both formats' inline work (1 MiB inflated; 4 KiB of envelope).
        _ = try await Self.plan(
            try Self.body(kind, reports: [ReportShape()], logs: [kind == .zip ? 40_000 : 200]),
            with: Self.format(kind, pool: pool))
        #expect(pool.completedJobs == 1)
        // A small body holding large reports (the review's finding 1: 160 KB of hostile names in 1.3 KB).
        _ = try await Self.plan(
            try Self.body(kind, reports: [ReportShape(padding: 20_000)]), with: Self.format(kind, pool: pool))
        #expect(pool.completedJobs == 2)
    }

    @Test("a report as the crash handler writes it at its own limits is kept whole; past them it is cut and says so")
    func reportBoundsAreTheCrashHandlers() {
        func report(frames: Int, threads: Int, threadFrames: Int, images: Int) -> CrashReport {
            var report = Reports.crash(functions: (0..<frames - 1).map { "shop.f\($0)() -> ()" })
            let other = report.frames.prefix(threadFrames).map { $0 }
            report.threads =
                [.init(id: 1, name: "main", crashed: true, frameSource: "libunwind", frames: report.frames)]
                + (0..<threads).map {
                    .init(id: Int32($0 + 2), name: nil, crashed: false, frameSource: "libunwind", frames: Array(other))
                }
            report.images = Array(repeating: report.images[0], count: images)
            return report
        }
        // The assembler's own budget for the other threads is 6,000 frames.
        var atLimits = report(frames: 1_024, threads: 23, threadFrames: 256, images: 4_096)
        let before = atLimits
        #expect(!ReportBounds.cut(&atLimits))
        #expect(atLimits == before)

        var past = report(frames: 3_000, threads: 600, threadFrames: 300, images: 5_000)
        #expect(ReportBounds.cut(&past))
        #expect(past.frames.count == ReportBounds.maxFrames)
        #expect(past.omittedFrames?.count == 3_000 - ReportBounds.maxFrames)
        let threads = past.threads ?? []
        #expect(threads.count == ReportBounds.maxThreads)
        #expect(threads[0].frames.count == ReportBounds.maxFrames, "the failing thread keeps as many as `frames`")
        let others = threads.dropFirst()
        #expect(others.allSatisfy { $0.frames.count <= ReportBounds.maxThreadFrames })
        #expect(others.reduce(0) { $0 + $1.frames.count } == ReportBounds.maxAllThreadFrames)
        #expect(others.last?.problem == "truncated")
        #expect(past.images.count == ReportBounds.maxImages)
        #expect(past.notes.last?.contains("left out") == true, "\(past.notes)")
    }
}
