import AsyncHTTPClient
import BlackboxCompression
import BlackboxFormat
import BlackboxTestSupport
import CollectorTestSupport
import Foundation
import Testing

@testable import BlackboxCollector

/// The hostile holder of an ingest key, all at once, against a real collector process whose memory
/// is read from /proc: idle connections, the manifest that once took a server to 2.2 GB, reports
/// filling the per-bundle limit from several uploads together, a log of millions of short lines,
/// and zip bombs, while an honest client keeps uploading and a watcher keeps asking /health.
@Suite("Hostile clients against a collector process")
struct HostileProcessTests {
    @Test("memory stays bounded, /health keeps answering and honest uploads go through")
    func underAttack() async throws {
        let scratch = TemporaryDirectory(prefix: "collector-hostile")
        defer { scratch.remove() }
        let directory = scratch.path
        let collector = try await CollectorProcess.start(dataDirectory: directory)
        defer { collector.kill(SIGTERM) }
        let port = try #require(URL(string: collector.baseURL)?.port)
        let upload = Self.bundleSender(collector)
        // Megabytes of bodies are built on a thread of their own: built on the test's cooperative
        // threads, they starved every other test running in parallel for seconds.
        let (shortLines, fullReports, repeatedListing, ratioBomb) = try await offThePool { try Self.makeBodies() }
        let (sentryEvent, oversizedSentryEvent) = try await offThePool {
            (
                try Self.sentryEnvelope(eventBytes: SentryEnvelopeFormat.maxEventItemBytes - 64),
                try Self.sentryEnvelope(eventBytes: 7 << 20)
            )
        }
        let sendEnvelope = Self.envelopeSender(collector)

        try await Self.measureUnderAttack(collector, directory: directory) {
            // 1,100 idle connections, held by a process of their own: in this one they would take its
            // descriptors past 1,024, where Foundation's `Process` (its CFSocket select loop) corrupts
            // memory for every test that runs a program meanwhile (a parallel run hung for good).
            let ready = "\(directory)/idle-connections-open"
            let idle = try Tool.Running(
                "/usr/bin/python3", ["-c", IdleConnections.script, String(port), "1100", ready, "hold"],
                environment: [:])
            defer { idle.kill(SIGKILL) }
            for _ in 0..<600 where !FileManager.default.fileExists(atPath: ready) {
                try await Task.sleep(for: .milliseconds(50))
            }
            #expect(FileManager.default.fileExists(atPath: ready), "\(Tool.output(of: idle))")

            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<3 {
                    group.addTask {
                        let answer = try await upload(repeatedListing)
                        #expect(answer.status == 422, "\(answer.text.prefix(200))")
                    }
                }
                for _ in 0..<6 {
                    group.addTask {
                        // Refused when the shared budget is spent (503, resend later), or stored.
                        let answer = try await upload(fullReports)
                        #expect([201, 200, 503].contains(answer.status), "\(answer.text.prefix(200))")
                    }
                }
                group.addTask {
                    let answer = try await upload(shortLines)
                    #expect(answer.status == 201, "\(answer.text.prefix(200))")
                }
                // Security review 2026-11-27, finding 3: events whose JSON tree is ~40 times their bytes. One
                // of Sentry's 1 MiB is charged its tree, so only a few are read at once (the rest: resend
                // later); a 7 MiB one is refused unread.
                for _ in 0..<4 {
                    group.addTask {
                        let answer = try await sendEnvelope(sentryEvent)
                        // 429 is the Sentry route's "resend later" (SDKs hold back on it).
                        #expect([200, 429].contains(answer.status), "\(answer.text.prefix(200))")
                    }
                }
                for _ in 0..<2 {
                    group.addTask {
                        let answer = try await sendEnvelope(oversizedSentryEvent)
                        #expect(answer.status == 422, "\(answer.text.prefix(200))")
                    }
                }
                group.addTask {
                    let answer = try await upload(ratioBomb)
                    #expect(answer.status == 422, "\(answer.text.prefix(200))")
                }
                try await group.waitForAll()
            }
        }
    }

    /// Security review 2026-11-27, in the shapes its evidence gives, all at once: the quadratic names
    /// (finding 1) in a zip bundle and in Sentry events, an envelope of 999 `log` items of 10,000
    /// records (2), Sentry events of empty frames that once became 70 times their size (6) and of
    /// many frames and images (7), with the ingest key; chunk uploads of 500 tiny parts (4) and an
    /// assemble naming one chunk 256 times (5), with a symbols key. (Finding 3 is in `underAttack`;
    /// 10, keyless envelopes, in `HostileConnectionTests`.)
    @Test("the security review's patterns against a collector process: bounded, and no other client slowed")
    func reviewPatterns() async throws {
        let scratch = TemporaryDirectory(prefix: "collector-review")
        defer { scratch.remove() }
        let directory = scratch.path
        let collector = try await CollectorProcess.start(dataDirectory: directory)
        defer { collector.kill(SIGTERM) }
        let symbolsKey = try Self.createKey(dataDirectory: directory, project: "1", kind: "symbols")
        let bodies = try await offThePool { try ReviewPatterns.make() }
        let sendEnvelope = Self.envelopeSender(collector)
        let upload = Self.bundleSender(collector)
        @Sendable func symbols(_ path: String, _ body: Data, contentType: String) async throws -> HTTPResult {
            try await HTTP.request(
                collector.baseURL + path, method: .POST,
                headers: [("Authorization", "Bearer \(symbolsKey)"), ("Content-Type", contentType)], body: body)
        }

        try await Self.measureUnderAttack(collector, directory: directory) {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<2 {
                    group.addTask {
                        // Stored (the second one: as a duplicate of the first, the same bytes).
                        let answer = try await upload(bodies.quadraticNamesBundle)
                        #expect([200, 201].contains(answer.status), "\(answer.text.prefix(200))")
                    }
                    group.addTask {
                        let answer = try await sendEnvelope(bodies.quadraticNamesEnvelope)
                        #expect([200, 429].contains(answer.status), "\(answer.text.prefix(200))")
                    }
                    group.addTask {
                        let answer = try await symbols(
                            "/api/0/organizations/blackbox/chunk-upload/", bodies.tinyChunks,
                            contentType: ChunkForm.contentType)
                        #expect(answer.status == 400, "\(answer.text.prefix(200))")
                    }
                }
                group.addTask {
                    let answer = try await sendEnvelope(bodies.logItems)
                    #expect([200, 429].contains(answer.status), "\(answer.text.prefix(200))")
                }
                for body in bodies.emptyFrameEvents + [bodies.framesAndImages] {
                    group.addTask {
                        let answer = try await sendEnvelope(body)
                        #expect([200, 429].contains(answer.status), "\(answer.text.prefix(200))")
                    }
                }
                group.addTask {
                    let kept = try await symbols(
                        "/api/0/organizations/blackbox/chunk-upload/", bodies.oneChunk,
                        contentType: ChunkForm.contentType)
                    #expect(kept.status == 200, "\(kept.text.prefix(200))")
                    let answer = try await symbols(
                        "/api/0/projects/blackbox/default/files/difs/assemble/", bodies.repeatedAssemble,
                        contentType: "application/json")
                    #expect(answer.text.contains("more than once"), "\(answer.text.prefix(300))")
                }
                try await group.waitForAll()
            }
        }
        // Finding 6: what the events became is bounded (the review measured +143 MiB for ten of them).
        let database = try FileManager.default.contentsOfDirectory(atPath: directory)
            .filter { $0.hasPrefix("collector.sqlite") }
            .reduce(0) {
                $0 + ((try? FileManager.default.attributesOfItem(atPath: "\(directory)/\($1)")[.size] as? Int) ?? 0)
            }
        print("hostile suite (review patterns): database \(database >> 20) MiB")
        #expect(database < 64 << 20, "database \(database) bytes")
    }

    /// Runs `attack` against `collector` while another project's app keeps uploading and a process of
    /// its own keeps asking `/health`, and holds the collector to issue 47's bar: `/health` p99 under
    /// 1 s, the process's peak memory under 512 MiB, the other project's uploads within a few times
    /// their usual time (measured first, on the same machine) and never told to resend.
    static func measureUnderAttack(
        _ collector: CollectorProcess, directory: String, _ attack: @escaping @Sendable () async throws -> Void
    ) async throws {
        let quietKey = [
            ("Authorization", "Bearer \(try Self.createKey(dataDirectory: directory, project: "quiet"))"),
            ("Content-Type", "application/zip"),
        ]
        let honest = try BundleArchive.make(
            app: .init(name: "shop"), host: "h", reports: [Reports.crash(functions: ["shop.f() -> ()"])],
            logs: [("a.log", Data("honest line\n".utf8))])
        /// An honest upload's time to its acknowledgement, resent after a "resend later" as the
        /// uploader does.
        @Sendable func honestUpload() async throws -> Duration {
            let started = ContinuousClock.now
            while true {
                let answer = try await HTTP.request(
                    "\(collector.baseURL)/api/v1/bundles", method: .POST,
                    headers: quietKey + [("Upload-Id", UUID().uuidString)], body: honest, client: Self.anotherApp)
                guard answer.status == 503 else {
                    #expect([200, 201].contains(answer.status), "\(answer.text.prefix(200))")
                    return ContinuousClock.now - started
                }
                print("hostile suite: another project's upload was told to resend: \(answer.text.prefix(200))")
                try await Task.sleep(for: .milliseconds(200))
            }
        }
        var usualTimes: [Duration] = []
        for _ in 0..<10 { usualTimes.append(try await honestUpload()) }

        let healthWatcher = try HealthWatcher(baseURL: collector.baseURL, directory: directory)
        let attackEnded = Flag()
        let attacking = Task {
            defer { attackEnded.set() }
            try await attack()
        }
        // The other app uploads as long as the attack lasts (at least ten times), a little apart.
        var honestLatencies: [Duration] = []
        repeat {
            honestLatencies.append(try await honestUpload())
            try await Task.sleep(for: .milliseconds(50))
        } while honestLatencies.count < 10 || !attackEnded.isSet
        try await attacking.value
        let health = healthWatcher.stop()
        let peak = collector.peakRSS
        let usual = usualTimes.max() ?? .zero
        let sorted = honestLatencies.sorted()
        let (typical, slowest) = (sorted[sorted.count / 2], sorted[sorted.count - 1])
        print(
            "hostile suite: collector peak RSS \(Int(peak)) MiB; \(health); "
                + "another project's \(sorted.count) uploads under attack: median \(typical), slowest "
                + "\(sorted.suffix(3).reversed().map { "\($0)" }.joined(separator: ", ")); "
                + "before: slowest \(usual)")
        #expect(peak < 512, "peak RSS \(peak) MiB")
        #expect(health.requests > 0 && health.failures == 0, "\(health)")
        // The bar. Measured 64–99 ms in debug builds beside two CI runs, so a miss is no accident. On
        // the 99th percentile: the slowest single answer, on 2 CPUs shared with a build and a hundred
        // tests, once took 1.018 s (the Python client's own scheduling included). An event loop held
        // by the hostile uploads fails both bars.
        #expect(health.p99 < .seconds(1), "\(health)")
        #expect(health.worst < .seconds(5), "\(health)")
        // Under every attack at once on 2 CPUs the attacks' CPU is the kernel's to share, so "its
        // usual time" is a bound of a few times it, not equality. Measured (debug build, 2026-11-28):
        // usual 10-50 ms; under attack median 25 ms, slowest 89 ms.
        #expect(
            typical < max(usual * 10, .milliseconds(500)),
            "another project's uploads: \(honestLatencies), usual \(usualTimes)")
        // No upload stalls for long either. Against a release collector the slowest was 0.05-0.26 s;
        // a debug one in a CI run (a hundred other tests, a release build beside) answered the
        // review's patterns' other project in 2.5 and 4.7 s once each among 160 (not explained yet,
        // issue 47). What this catches: the review's critical held every request for 144 s.
        #expect(slowest < max(usual * 20, .seconds(10)), "another project's uploads: \(honestLatencies)")
    }

    /// Uploads a zip bundle with the first project's ingest key.
    static func bundleSender(_ collector: CollectorProcess) -> @Sendable (Data) async throws -> HTTPResult {
        { body in
            try await HTTP.request(
                "\(collector.baseURL)/api/v1/bundles", method: .POST,
                headers: [
                    ("Authorization", "Bearer \(collector.ingestKey)"), ("Content-Type", "application/zip"),
                    ("Upload-Id", UUID().uuidString),
                ], body: body)
        }
    }

    /// Sends a gzipped Sentry envelope with the first project's ingest key.
    static func envelopeSender(_ collector: CollectorProcess) -> @Sendable (Data) async throws -> HTTPResult {
        { body in
            try await HTTP.request(
                "\(collector.baseURL)/api/1/envelope/", method: .POST,
                headers: [
                    ("X-Sentry-Auth", "Sentry sentry_key=\(collector.ingestKey), sentry_version=7"),
                    ("Content-Encoding", "gzip"), ("Content-Type", "application/x-sentry-envelope"),
                ], body: body)
        }
    }

    /// The other project's app has an HTTP client of its own, as a separate app does. On the shared
    /// one its first upload under attack waited 3.4-7.5 s in the client's own queue: a client opens at
    /// most 8 connections to one host, and the attack's 17 uploads held them all.
    static let anotherApp = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup)

    /// A new key, made with the collector's own commands beside the running server: for `project` (an
    /// id), or for a new project of that name.
    static func createKey(dataDirectory: String, project: String, kind: String = "ingest") throws -> String {
        let data = ["--data-dir", dataDirectory]
        var id = project
        if Int(project) == nil {
            let (created, createdOutput) = try ChildRun.run(
                CollectorProcess.executable, ["projects", "create", project] + data)
            let text = String(decoding: createdOutput, as: UTF8.self)
            // "project <id> <name> created; …"
            id = String(
                try #require(
                    created == 0 ? text.split(separator: " ").dropFirst().first : nil, "projects create: \(text)"))
        }
        let (status, output) = try ChildRun.run(
            CollectorProcess.executable, ["keys", "create", "--project", id, "--kind", kind] + data)
        let keyLine = String(decoding: output, as: UTF8.self)
        let secret = try #require(
            status == 0 ? keyLine.split(separator: "\n").first?.split(separator: " ").last : nil,
            "keys create: \(keyLine)")
        return String(secret)
    }

    /// A gzipped envelope of one event of about `eventBytes` of nested lists (`[[[[0]]]]`, the JSON
    /// whose tree is largest for its size).
    static func sentryEnvelope(eventBytes: Int) throws -> Data {
        let unit = "[[[[0]]]],"
        let lists = String(repeating: unit, count: (eventBytes - 40) / unit.utf8.count).dropLast()
        let event = "{\"message\":\"deep\",\"extra\":{\"x\":[\(lists)]}}"
        let envelope = "{}\n{\"type\":\"event\",\"length\":\(event.utf8.count)}\n\(event)\n"
        return Data(try GzipData.compress(Array(envelope.utf8)))
    }

    typealias Bodies = (shortLines: Data, fullReports: Data, repeatedListing: Data, ratioBomb: Data)

    static func makeBodies() throws -> Bodies {
        let hostile = HostileUploadTests()
        var generator = SystemRandomNumberGenerator()
        var lines = Data(capacity: 4 << 20)
        for _ in 0..<2_000_000 { lines.append(contentsOf: [UInt8(ascii: "a") + (generator.next() as UInt8) % 26, 10]) }
        let shortLines = try BundleArchive.make(app: .init(name: "shop"), host: "h", logs: [("short.log", lines)])
        return (shortLines, try reportsNearTheBundleLimit(), try hostile.repeatedListing(), try hostile.ratioOnlyBomb())
    }

    /// Four reports of just under 8 MiB of hex (which deflates only about 2×, so the inflation
    /// ratio stays low): about 30 MiB of reports in one bundle, under the per-bundle limit.
    static func reportsNearTheBundleLimit() throws -> Data {
        var generator = SystemRandomNumberGenerator()
        let digits = Array("0123456789abcdef".utf8)
        var reports: [CrashReport] = []
        for _ in 0..<4 {
            var report = Reports.crash(functions: ["shop.f() -> ()"])
            let padding = (0..<(7 << 20)).map { _ in digits[Int((generator.next() as UInt8) & 0xF)] }
            report.metadata = ["padding": String(decoding: padding, as: UTF8.self)]
            reports.append(report)
        }
        return try BundleArchive.make(app: .init(name: "shop"), host: "h", reports: reports)
    }
}
