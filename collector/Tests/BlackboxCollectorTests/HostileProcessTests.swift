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
        let key = [("Authorization", "Bearer \(collector.ingestKey)"), ("Content-Type", "application/zip")]
        func upload(_ body: Data, key: [(String, String)] = key) async throws -> HTTPResult {
            try await HTTP.request(
                "\(collector.baseURL)/api/v1/bundles", method: .POST, headers: key + [("Upload-Id", UUID().uuidString)],
                body: body)
        }
        // The honest client is another project's app: every attack comes with the first project's key
        // (public: it ships in every app), and must not slow another project's uploads.
        let quietKey = [
            ("Authorization", "Bearer \(try Self.createIngestKey(dataDirectory: directory, project: "quiet"))"),
            ("Content-Type", "application/zip"),
        ]
        /// An honest upload's time to its acknowledgement, resent after a "resend later" as the uploader
        /// does.
        func honestUpload(_ body: Data) async throws -> Duration {
            let started = ContinuousClock.now
            var answer = try await upload(body, key: quietKey)
            while answer.status == 503 {
                print("hostile suite: another project's upload was told to resend: \(answer.text.prefix(200))")
                try await Task.sleep(for: .milliseconds(200))
                answer = try await upload(body, key: quietKey)
            }
            #expect([200, 201].contains(answer.status), "\(answer.text.prefix(200))")
            return ContinuousClock.now - started
        }

        // Megabytes of bodies are built on a thread of their own: built on the test's cooperative
        // threads, they starved every other test running in parallel for seconds.
        let bodies = try await offThePool { try Self.makeBodies() }
        let (honest, shortLines, fullReports, repeatedListing, ratioBomb) = bodies
        let (sentryEvent, oversizedSentryEvent) = try await offThePool {
            (
                try Self.sentryEnvelope(eventBytes: SentryEnvelopeFormat.maxEventItemBytes - 64),
                try Self.sentryEnvelope(eventBytes: 7 << 20)
            )
        }
        func sendEnvelope(_ body: Data) async throws -> HTTPResult {
            try await HTTP.request(
                "\(collector.baseURL)/api/1/envelope/", method: .POST,
                headers: [
                    ("X-Sentry-Auth", "Sentry sentry_key=\(collector.ingestKey), sentry_version=7"),
                    ("Content-Encoding", "gzip"), ("Content-Type", "application/x-sentry-envelope"),
                ], body: body)
        }

        // Its usual time, before any attack.
        var usualTimes: [Duration] = []
        for _ in 0..<10 { usualTimes.append(try await honestUpload(honest)) }

        let healthWatcher = try HealthWatcher(baseURL: collector.baseURL, directory: directory)

        // 1,100 idle connections, held by a process of their own: in this one they would take its
        // descriptors past 1,024, where Foundation's `Process` (its CFSocket select loop) corrupts
        // memory for every test that runs a program meanwhile (a parallel run hung for good).
        let ready = "\(directory)/idle-connections-open"
        let idle = try Tool.Running(
            "/usr/bin/python3", ["-c", IdleConnections.script, String(port), "1100", ready, "hold"], environment: [:])
        for _ in 0..<600 where !FileManager.default.fileExists(atPath: ready) {
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(FileManager.default.fileExists(atPath: ready), "\(Tool.output(of: idle))")

        let honestLatencies = try await withThrowingTaskGroup(of: [Duration].self) { group in
            for _ in 0..<3 {
                group.addTask {
                    let answer = try await upload(repeatedListing)
                    #expect(answer.status == 422, "\(answer.text.prefix(200))")
                    return []
                }
            }
            for _ in 0..<6 {
                group.addTask {
                    // Refused when the shared budget is spent (503, resend later), or stored.
                    let answer = try await upload(fullReports)
                    #expect([201, 200, 503].contains(answer.status), "\(answer.text.prefix(200))")
                    return []
                }
            }
            group.addTask {
                let answer = try await upload(shortLines)
                #expect(answer.status == 201, "\(answer.text.prefix(200))")
                return []
            }
            // Security review 2026-11-27, finding 3: events whose JSON tree is ~40 times their bytes. One of
            // Sentry's 1 MiB is charged its tree, so only a few are read at once (the rest: resend later);
            // a 7 MiB one is refused unread.
            for _ in 0..<4 {
                group.addTask {
                    let answer = try await sendEnvelope(sentryEvent)
                    // 429 is the Sentry route's "resend later" (SDKs hold back on it).
                    #expect([200, 429].contains(answer.status), "\(answer.text.prefix(200))")
                    return []
                }
            }
            for _ in 0..<2 {
                group.addTask {
                    let answer = try await sendEnvelope(oversizedSentryEvent)
                    #expect(answer.status == 422, "\(answer.text.prefix(200))")
                    return []
                }
            }
            group.addTask {
                let answer = try await upload(ratioBomb)
                #expect(answer.status == 422, "\(answer.text.prefix(200))")
                return []
            }
            group.addTask {
                var honestTimes: [Duration] = []
                for _ in 0..<10 { honestTimes.append(try await honestUpload(honest)) }
                print("hostile suite: another project's uploads under attack: \(honestTimes)")
                return honestTimes
            }
            return try await group.reduce(into: [Duration]()) { $0 += $1 }
        }
        idle.kill(SIGKILL)
        let health = healthWatcher.stop()
        let peak = collector.peakRSS
        let usual = usualTimes.max() ?? .zero
        let underAttack = honestLatencies.max() ?? .zero
        let typicalUnderAttack = honestLatencies.sorted()[honestLatencies.count / 2]
        print(
            "hostile suite: collector peak RSS \(Int(peak)) MiB; /health p99 \(health.p99), slowest \(health.worst); "
                + "another project's uploads under attack: median \(typicalUnderAttack), slowest \(underAttack); "
                + "before: slowest \(usual)")
        #expect(peak < 512, "peak RSS \(peak) MiB")
        #expect(health.requests > 0 && health.failures == 0, "/health: \(health)")
        // The bar. Measured 64–99 ms in debug builds beside two CI runs, so a miss is no accident. On
        // the 99th percentile: the slowest single answer, on 2 CPUs shared with a build and a hundred
        // tests, once took 1.018 s (the Python client's own scheduling included). An event loop held
        // by the hostile uploads fails both bars.
        #expect(health.p99 < .seconds(1), "/health p99 \(health.p99), slowest \(health.worst)")
        #expect(health.worst < .seconds(5), "slowest /health \(health.worst)")
        // Another project's uploads, under every attack at once on 2 CPUs: the attacks' CPU is the
        // kernel's to share, so "its usual time" is a bound of a few times it, not equality. Measured
        // (debug build, 2026-11-28): 10-15 ms each, before and under attack, but the first one under
        // attack 3.5-4.1 s, while every inspection thread and one other thread (unnamed: a cooperative
        // or a database thread) were busy; not explained yet (issue 54). Never told to resend: its
        // memory share is its own.
        #expect(
            typicalUnderAttack < max(usual * 10, .milliseconds(500)),
            "another project's uploads: \(honestLatencies), usual \(usualTimes)")
        // The first upload's stall: 3.5-5.6 s quiet, 7.5 s beside a looping release build.
        #expect(underAttack < .seconds(20), "another project's uploads: \(honestLatencies)")
    }

    /// A new project's ingest key, made with the collector's own command beside the running server.
    static func createIngestKey(dataDirectory: String, project: String) throws -> String {
        let data = ["--data-dir", dataDirectory]
        let (created, createdOutput) = try ChildRun.run(
            CollectorProcess.executable, ["projects", "create", project] + data)
        let text = String(decoding: createdOutput, as: UTF8.self)
        // "project <id> <name> created; …"
        let id = try #require(
            created == 0 ? text.split(separator: " ").dropFirst().first : nil, "projects create: \(text)")
        let (status, output) = try ChildRun.run(
            CollectorProcess.executable, ["keys", "create", "--project", String(id)] + data)
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

    typealias Bodies = (honest: Data, shortLines: Data, fullReports: Data, repeatedListing: Data, ratioBomb: Data)

    static func makeBodies() throws -> Bodies {
        let hostile = HostileUploadTests()
        let honest = try BundleArchive.make(
            app: .init(name: "shop"), host: "h", reports: [Reports.crash(functions: ["shop.f() -> ()"])],
            logs: [("a.log", Data("honest line\n".utf8))])
        var generator = SystemRandomNumberGenerator()
        var lines = Data(capacity: 4 << 20)
        for _ in 0..<2_000_000 { lines.append(contentsOf: [UInt8(ascii: "a") + (generator.next() as UInt8) % 26, 10]) }
        let shortLines = try BundleArchive.make(app: .init(name: "shop"), host: "h", logs: [("short.log", lines)])
        return (
            honest, shortLines, try reportsNearTheBundleLimit(), try hostile.repeatedListing(),
            try hostile.ratioOnlyBomb()
        )
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
