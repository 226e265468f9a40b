import AsyncHTTPClient
import BlackboxCollector
import BlackboxFormat
import CollectorTestSupport
import Foundation
import NIOCore

// `BENCH_ROWS=symbols`: symbolication on the collector (issue 18). Reports of 30 unnamed frames in 5
// images whose debug files are in the symbol store; three measurements:
// - ack → symbolicated, p50/p99, with reports arriving open loop at 50/s and symbols cached;
// - reports symbolicated per second, when symbols for a backlog of reports arrive late;
// - the 10 KB ingest row beside the symbolication of a backlog, against the same row on a collector
//   holding the same backlog without its symbols (three pairs, fresh collectors).

/// One of the five images: a shared library built with debug info, and its functions' addresses.
struct BenchImage {
    var path: String
    var buildID: String
    var functions: [UInt64]
}

enum SymbolicationBench {
    static let framesPerReport = 30
    static let images = 5

    /// Five small C libraries with debug info (clang from the toolchain), 12 functions each.
    static func makeImages(in directory: String) throws -> [BenchImage] {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        return try (0..<images).map { image in
            let source = (0..<12).map { function in
                "__attribute__((noinline)) int f\(image)_\(function)(int x) { return x * \(function + 3) + \(image); }"
            }.joined(separator: "\n")
            let path = "\(directory)/libbench\(image).so"
            try Data(source.utf8).write(to: URL(fileURLWithPath: "\(directory)/bench\(image).c"))
            try run(
                "/usr/bin/env",
                ["clang", "-g", "-O1", "-shared", "-fPIC", "-Wl,--build-id", "-o", path, "bench\(image).c"],
                in: directory)
            let notes = try run("/usr/bin/readelf", ["-n", path], in: directory)
            guard
                let buildID = notes.split(separator: "\n").first(where: { $0.contains("Build ID") })?
                    .split(separator: " ").last.map(String.init)
            else { throw BenchFailure(description: "\(path) has no build-id") }
            let symbols = try run("/usr/bin/nm", ["--defined-only", path], in: directory)
            let functions = symbols.split(separator: "\n").compactMap { line -> UInt64? in
                let parts = line.split(separator: " ")
                guard parts.count == 3, parts[1] == "T", parts[2].hasPrefix("f") else { return nil }
                return UInt64(parts[0], radix: 16)
            }
            return BenchImage(path: path, buildID: buildID, functions: functions)
        }
    }

    /// A crash report whose frames are unnamed addresses inside the images' functions.
    static func report(_ index: Int, images: [BenchImage]) -> CrashReport {
        var report = CrashReport(
            kind: .crash, app: .init(name: "bench", version: "1.0"),
            host: .init(name: "bench", os: "Linux", kernel: "Linux", architecture: "x86_64"),
            process: .init(pid: 1, crashTime: Date()), thread: .init(id: 1, name: "main"))
        report.signal = .init(number: 11, name: "SIGSEGV", code: 1, codeName: "SEGV_MAPERR", faultAddress: "0x0")
        report.images = images.enumerated().map { position, image in
            let base = UInt64(0x7f00_0000_0000) + UInt64(position) << 28
            return .init(
                path: image.path, bias: hex(base), start: hex(base), end: hex(base + 0x10_0000), buildID: image.buildID)
        }
        report.frames = (0..<framesPerReport).map { frame in
            let position = frame % images.count
            let image = images[position]
            let function = image.functions[(frame / images.count + index) % image.functions.count]
            let base = UInt64(0x7f00_0000_0000) + UInt64(position) << 28
            return .init(
                index: frame, address: hex(base + function + 4), imageIndex: position, imageOffset: hex(function + 4),
                symbols: [])
        }
        return report
    }

    static func hex(_ value: UInt64) -> String { "0x" + String(value, radix: 16) }

    static func bundles(_ range: Range<Int>, images: [BenchImage]) throws -> [Data] {
        try range.map { index in
            try BundleArchive.make(
                app: .init(name: "bench", version: "1.0"), host: "bench", reports: [report(index, images: images)])
        }
    }

    static func uploadSymbols(_ images: [BenchImage], to collector: CollectorProcess) async throws {
        for image in images {
            var request = HTTPClientRequest(
                url:
                    "\(collector.baseURL)/api/v1/symbols/\(image.buildID)?name=\((image.path as NSString).lastPathComponent)"
            )
            request.method = .PUT
            request.headers.add(name: "Authorization", value: "Bearer \(collector.adminToken)")
            request.body = .bytes(ByteBuffer(bytes: try Data(contentsOf: URL(fileURLWithPath: image.path))))
            let response = try await HTTPClient.shared.execute(request, timeout: .seconds(60))
            _ = try await response.body.collect(upTo: 1 << 20)
            guard response.status.code == 201 || response.status.code == 200 else {
                throw BenchFailure(description: "symbol upload answered \(response.status.code)")
            }
        }
    }

    /// `blackbox_reports_symbolicated_total` from `/metrics`.
    static func symbolicatedCount(_ collector: CollectorProcess) async throws -> Int {
        let response = try await HTTPClient.shared.execute(
            HTTPClientRequest(url: "\(collector.baseURL)/metrics"), timeout: .seconds(10))
        let text = String(buffer: try await response.body.collect(upTo: 4 << 20))
        let line = text.split(separator: "\n").first { $0.hasPrefix("blackbox_reports_symbolicated_total ") }
        return line.flatMap { $0.split(separator: " ").last }.flatMap { Double($0) }.map { Int($0) } ?? 0
    }

    /// Waits until `count` reports were symbolicated; the instant each count was first seen.
    static func waitForSymbolicated(_ count: Int, collector: CollectorProcess, timeout: Duration = .seconds(600))
        async throws -> [(count: Int, at: ContinuousClock.Instant)]
    {
        var seen: [(Int, ContinuousClock.Instant)] = []
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            let current = try await symbolicatedCount(collector)
            if seen.last?.0 != current { seen.append((current, .now)) }
            if current >= count { return seen }
            try await Task.sleep(for: .milliseconds(10))
        }
        throw BenchFailure(description: "only \(seen.last?.0 ?? 0) of \(count) reports symbolicated in \(timeout)")
    }

    /// Waits until every uploaded report is known to wait for symbols (listed as missing).
    static func waitUntilQueued(_ reports: Int, collector: CollectorProcess) async throws {
        for _ in 0..<6_000 {
            var request = HTTPClientRequest(url: "\(collector.baseURL)/api/v1/symbols/missing")
            request.headers.add(name: "Authorization", value: "Bearer \(collector.adminToken)")
            let response = try await HTTPClient.shared.execute(request, timeout: .seconds(10))
            let body = try await response.body.collect(upTo: 4 << 20)
            let json = try JSONSerialization.jsonObject(with: Data(buffer: body)) as? [String: Any]
            let items = json?["items"] as? [[String: Any]] ?? []
            if items.count == images, items.allSatisfy({ $0["reports"] as? Int == reports }) { return }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw BenchFailure(description: "the reports were not queued")
    }

    /// Uploads bundles one after another, each when it is due at `rate` per second; the instant each
    /// was acknowledged.
    static func uploadOpenLoop(_ bundles: [Data], rate: Double, to collector: CollectorProcess) async throws
        -> [ContinuousClock.Instant]
    {
        let started = ContinuousClock.now
        var acknowledged: [ContinuousClock.Instant] = []
        for (index, bundle) in bundles.enumerated() {
            try await Task.sleep(until: started + .nanoseconds(Int64(Double(index) / rate * 1e9)))
            var request = HTTPClientRequest(url: "\(collector.baseURL)/api/v1/bundles")
            request.method = .POST
            request.headers.add(name: "Authorization", value: "Bearer \(collector.ingestKey)")
            request.headers.add(name: "Upload-Id", value: UUID().uuidString)
            request.body = .bytes(ByteBuffer(bytes: bundle))
            let response = try await HTTPClient.shared.execute(request, timeout: .seconds(60))
            _ = try await response.body.collect(upTo: 1 << 20)
            guard response.status == .created else { throw BenchFailure(description: "upload \(response.status)") }
            acknowledged.append(.now)
        }
        return acknowledged
    }

    static func milliseconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) * 1000 + Double(duration.components.attoseconds) / 1e15
    }

    static func seconds(_ duration: Duration) -> Double { milliseconds(duration) / 1000 }

    static func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        return sorted.isEmpty ? .nan : sorted[sorted.count / 2]
    }

    struct Results: Codable {
        var latencyReports: Int
        var ackToSymbolicatedP50Milliseconds: Double
        var ackToSymbolicatedP99Milliseconds: Double
        var lateReports: Int
        var lateSymbolicatedPerSecond: Double
        /// Reports waiting for symbols on each collector of the paired 10 KB rows.
        var backlogReports: Int
        var smallAlone: [Measurement]
        var smallBesideSymbolication: [Measurement]
        /// Reports symbolicated by the end of each `smallBesideSymbolication` row: fewer than
        /// `backlogReports` means symbolication ran for the whole row.
        var symbolicatedDuringSmallRow: [Int]

        /// Median beside over median alone.
        var besideOverAlone: Double {
            median(smallBesideSymbolication.map(\.uploadsPerSecond)) / median(smallAlone.map(\.uploadsPerSecond))
        }
    }

    static func run(workDirectory: String) async throws -> Results {
        let images = try makeImages(in: "\(workDirectory)/symbol-images")

        // Ack → symbolicated, symbols cached: a warm-up, then 500 reports at 50/s.
        let latencyCollector = try startCollector("\(workDirectory)/symbols-latency")
        try await uploadSymbols(images, to: latencyCollector)
        _ = try await uploadOpenLoop(try bundles(0..<100, images: images), rate: 200, to: latencyCollector)
        _ = try await waitForSymbolicated(100, collector: latencyCollector)
        // The counter is watched while the reports arrive.
        let reports = try bundles(100..<600, images: images)
        async let watched = waitForSymbolicated(600, collector: latencyCollector)
        let acknowledged = try await uploadOpenLoop(reports, rate: 50, to: latencyCollector)
        let progress = try await watched
        // Reports are symbolicated in the order they were stored (one client: the order of acks).
        let latencies = acknowledged.enumerated().compactMap { index, ack -> Double? in
            progress.first { $0.count >= 101 + index }.map { milliseconds($0.at - ack) }
        }.sorted()
        func percentile(_ p: Double) -> Double { latencies[min(latencies.count - 1, Int(Double(latencies.count) * p))] }
        latencyCollector.kill(SIGTERM)

        // Late symbols: 3,000 reports wait, then their symbols arrive.
        let lateCollector = try startCollector("\(workDirectory)/symbols-late")
        let late = 3_000
        _ = try await measure(
            name: "queue", bundles: try bundles(0..<late, images: images), clients: 16, baseURL: lateCollector.baseURL,
            key: lateCollector.ingestKey, collectors: [lateCollector])
        try await waitUntilQueued(late, collector: lateCollector)
        let symbolsArrived = ContinuousClock.now
        try await uploadSymbols(images, to: lateCollector)
        let done = try await waitForSymbolicated(late, collector: lateCollector)
        let rate = Double(late) / seconds((done.last?.at ?? .now) - symbolsArrived)
        lateCollector.kill(SIGTERM)

        let paired = try await ingestBesideSymbolication(images: images, workDirectory: workDirectory)
        return Results(
            latencyReports: latencies.count, ackToSymbolicatedP50Milliseconds: percentile(0.5),
            ackToSymbolicatedP99Milliseconds: percentile(0.99), lateReports: late, lateSymbolicatedPerSecond: rate,
            backlogReports: paired.backlog, smallAlone: paired.alone, smallBesideSymbolication: paired.beside,
            symbolicatedDuringSmallRow: paired.symbolicatedDuring)
    }

    /// The 10 KB row on collectors holding the same backlog of reports that wait for symbols: without
    /// their symbols (nothing to symbolicate), and with them uploaded just before the row (the whole
    /// row beside symbolication). Each measurement on a fresh collector, in pairs whose order
    /// alternates, so neither a growing database nor the machine's drift favours one side.
    static func ingestBesideSymbolication(images: [BenchImage], workDirectory: String) async throws -> (
        backlog: Int, alone: [Measurement], beside: [Measurement], symbolicatedDuring: [Int]
    ) {
        let backlog = 3_000
        let backlogBundles = try bundles(0..<backlog, images: images)
        let warmUp = try makeBundles(count: 200, targetBytes: 10_000)
        let small = try WrkBodies(makeBundles(count: 16_000, targetBytes: 10_000))
        var alone: [Measurement] = []
        var beside: [Measurement] = []
        var symbolicatedDuring: [Int] = []
        for round in 0..<3 {
            for symbolicating in round % 2 == 0 ? [false, true] : [true, false] {
                let collector = try startCollector(
                    "\(workDirectory)/symbols-ingest-\(round)-\(symbolicating ? "beside" : "alone")")
                _ = try await measure(
                    name: "warm-up", bundles: warmUp, clients: 16, baseURL: collector.baseURL, key: collector.ingestKey,
                    collectors: [collector])
                _ = try await measure(
                    name: "queue", bundles: backlogBundles, clients: 16, baseURL: collector.baseURL,
                    key: collector.ingestKey, collectors: [collector])
                try await waitUntilQueued(backlog, collector: collector)
                if symbolicating { try await uploadSymbols(images, to: collector) }
                let row = try await measureWithWrk(
                    name: symbolicating
                        ? "10 KB bundles, beside symbolication of \(backlog) reports (round \(round + 1))"
                        : "10 KB bundles, \(backlog) reports waiting for symbols (round \(round + 1))",
                    bodies: small, connections: 64, seconds: 6, collector: collector, indexDatabase: nil)
                if symbolicating {
                    beside.append(row)
                    symbolicatedDuring.append(try await symbolicatedCount(collector))
                } else {
                    alone.append(row)
                }
                collector.kill(SIGTERM)
            }
        }
        return (backlog, alone, beside, symbolicatedDuring)
    }

    @discardableResult
    static func run(_ executable: String, _ arguments: [String], in directory: String) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.currentDirectoryURL = URL(fileURLWithPath: directory)
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw BenchFailure(description: "\(executable) \(arguments.joined(separator: " ")) failed")
        }
        return String(decoding: data, as: UTF8.self)
    }
}

struct BenchFailure: Error, CustomStringConvertible {
    var description: String
}
