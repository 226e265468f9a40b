import AsyncHTTPClient
import BlackboxCollector
import BlackboxFormat
import CollectorTestSupport
import Foundation
import NIOCore

// `make bench-collector`: a collector process (release build) on loopback, concurrent clients
// uploading distinct bundles, and the disk's raw numbers measured in the same run.
//
// Usage: blackbox-collector-bench COLLECTOR_BINARY [OUTPUT_JSON]

let arguments = CommandLine.arguments
guard arguments.count >= 2 else {
    FileHandle.standardError.write(Data("usage: blackbox-collector-bench COLLECTOR_BINARY [OUTPUT_JSON]\n".utf8))
    exit(2)
}
let collectorBinary = arguments[1]
let output = arguments.count > 2 ? arguments[2] : nil
let workDirectory =
    (ProcessInfo.processInfo.environment["BENCH_DIR"] ?? FileManager.default.currentDirectoryPath)
    + "/.bench-collector-\(getpid())"
try FileManager.default.createDirectory(atPath: workDirectory, withIntermediateDirectories: true)
defer { try? FileManager.default.removeItem(atPath: workDirectory) }

// MARK: Disk baselines

func ddBandwidth() throws -> Double {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/bin/dd")
    process.arguments = ["if=/dev/zero", "of=\(workDirectory)/dd.test", "bs=1M", "count=256", "conv=fdatasync"]
    let err = Pipe()
    process.standardError = err
    try process.run()
    let text = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    process.waitUntilExit()
    unlink("\(workDirectory)/dd.test")
    // "268435456 bytes (268 MB, 256 MiB) copied, 0.5 s, 537 MB/s"
    guard let copied = text.split(separator: ",").dropLast().last,
        let seconds = Double(copied.split(separator: " ").first ?? "")
    else {
        throw CocoaError(.fileReadCorruptFile)
    }
    return 268_435_456 / seconds / 1_000_000
}

/// write + fsync + rename + directory fsync of 10 KB files, for 2 seconds: what one durable upload
/// costs without any batching.
func bareDurableWrites() -> Double {
    let payload = [UInt8](repeating: 0x61, count: 10_000)
    let directory = "\(workDirectory)/bare"
    mkdir(directory, 0o700)
    let start = Date()
    var count = 0
    while Date().timeIntervalSince(start) < 2 {
        let temporary = "\(directory)/tmp-\(count)"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        _ = payload.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        fsync(fd)
        close(fd)
        rename(temporary, "\(directory)/file-\(count)")
        let dfd = open(directory, O_RDONLY | O_DIRECTORY)
        fsync(dfd)
        close(dfd)
        count += 1
    }
    return Double(count) / Date().timeIntervalSince(start)
}

// MARK: The collector process

/// A release collector for one workload: retention off, so nothing is deleted while measuring.
func startCollector(_ dataDirectory: String, arguments: [String] = []) throws -> CollectorProcess {
    try CollectorProcess(
        dataDirectory: dataDirectory, arguments: ["--retention-days", "0"] + arguments, executable: collectorBinary)
}

// MARK: Workload

/// Distinct bundles (distinct content, so none is a duplicate): a report and a log of incompressible
/// text, sized to land near `targetBytes` as a zip.
func makeBundles(count: Int, targetBytes: Int) throws -> [Data] {
    var generator = SystemRandomNumberGenerator()
    let hex = Array("0123456789abcdef".utf8)
    // Random hex compresses about 2:1 under deflate.
    let logBytes = targetBytes * 2
    let shared = (0..<logBytes).map { _ in hex[Int(UInt8.random(in: 0...15, using: &generator))] }
    return try (0..<count).map { index in
        var log = Data("bundle \(index) \(UUID().uuidString)\n".utf8)
        let rotation = (index * 7919) % max(1, shared.count)
        log.append(contentsOf: shared[rotation...])
        log.append(contentsOf: shared[..<rotation])
        let report = index % 10 == 0 ? [benchReport(index)] : []
        return try BundleArchive.make(
            app: .init(name: "bench", version: "1.0"), host: "bench", reports: report, logs: [("bench.log", log)])
    }
}

func benchReport(_ index: Int) -> CrashReport {
    var report = CrashReport(
        kind: .crash, app: .init(name: "bench", version: "1.0"),
        host: .init(name: "bench", os: "Linux", kernel: "Linux", architecture: "x86_64"),
        process: .init(pid: 1, crashTime: Date()), thread: .init(id: 1, name: "main"))
    report.signal = .init(number: 11, name: "SIGSEGV", code: 1, codeName: "SEGV_MAPERR", faultAddress: "0x0")
    report.frames = [.init(index: 0, address: "0x1000", symbols: [.init(function: "bench.crash\(index % 5)() -> ()")])]
    return report
}

struct Measurement: Codable {
    var name: String
    var clients: Int
    var uploads: Int
    var errors: Int
    var meanBundleBytes: Int
    var seconds: Double
    var uploadsPerSecond: Double
    var megabytesPerSecond: Double
    var p50Milliseconds: Double
    var p99Milliseconds: Double
    var collectorPeakRSSMiB: Double
}

/// Uploads every bundle once through `baseURL` (a collector, or a load balancer in front of some).
func measure(
    name: String, bundles: [Data], clients: Int, baseURL: String, key: String, collectors: [CollectorProcess]
) async throws -> Measurement {
    let next = ManagedCounter()
    let url = "\(baseURL)/api/v1/bundles"
    let started = ContinuousClock.now
    let results = try await withThrowingTaskGroup(of: [(Double, Bool)].self) { group in
        for _ in 0..<clients {
            group.addTask {
                var latencies: [(Double, Bool)] = []
                while true {
                    let index = next.increment()
                    guard index < bundles.count else { break }
                    var request = HTTPClientRequest(url: url)
                    request.method = .POST
                    request.headers.add(name: "Authorization", value: "Bearer \(key)")
                    request.headers.add(name: "Upload-Id", value: UUID().uuidString)
                    request.headers.add(name: "Content-Type", value: "application/zip")
                    request.body = .bytes(ByteBuffer(bytes: bundles[index]))
                    let begin = ContinuousClock.now
                    let ok: Bool
                    do {
                        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(120))
                        _ = try await response.body.collect(upTo: 1 << 20)
                        ok = response.status == .created
                    } catch {
                        ok = false
                    }
                    let elapsed = ContinuousClock.now - begin
                    latencies.append(
                        (Double(elapsed.components.seconds) * 1000 + Double(elapsed.components.attoseconds) / 1e15, ok))
                }
                return latencies
            }
        }
        var all: [(Double, Bool)] = []
        for try await part in group { all += part }
        return all
    }
    let elapsed = ContinuousClock.now - started
    let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    let sorted = results.map(\.0).sorted()
    func percentile(_ p: Double) -> Double {
        sorted.isEmpty ? 0 : sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]
    }
    let totalBytes = bundles.reduce(0) { $0 + $1.count }
    return Measurement(
        name: name, clients: clients, uploads: results.count, errors: results.filter { !$0.1 }.count,
        meanBundleBytes: totalBytes / max(1, bundles.count), seconds: seconds,
        uploadsPerSecond: Double(results.count) / seconds, megabytesPerSecond: Double(totalBytes) / seconds / 1_000_000,
        p50Milliseconds: percentile(0.50), p99Milliseconds: percentile(0.99),
        collectorPeakRSSMiB: collectors.map(\.peakRSS).max() ?? 0)
}

final class ManagedCounter: @unchecked Sendable {
    private let lock = NSLock()
    private var value = 0
    func increment() -> Int {
        lock.withLock {
            defer { value += 1 }
            return value
        }
    }
}

// MARK: Run

let dd = try ddBandwidth()
let bare = bareDurableWrites()
print(String(format: "disk: dd conv=fdatasync %.0f MB/s; bare write+fsync+rename of 10 KB: %.0f files/s", dd, bare))

let small = try makeBundles(count: 6_000, targetBytes: 10_000)
var measurements: [Measurement] = []
do {
    let collector = try startCollector("\(workDirectory)/small")
    // Warm-up: connections, SQLite pages.
    _ = try await measure(
        name: "warm-up", bundles: try makeBundles(count: 200, targetBytes: 10_000), clients: 16,
        baseURL: collector.baseURL, key: collector.ingestKey, collectors: [collector])
    measurements.append(
        try await measure(
            name: "10 KB bundles", bundles: small, clients: 64, baseURL: collector.baseURL, key: collector.ingestKey,
            collectors: [collector]))
    collector.kill(SIGTERM)
}
do {
    let large = try makeBundles(count: 96, targetBytes: 5_000_000)
    let collector = try startCollector("\(workDirectory)/large")
    measurements.append(
        try await measure(
            name: "5 MB bundles", bundles: large, clients: 8, baseURL: collector.baseURL, key: collector.ingestKey,
            collectors: [collector]))
    collector.kill(SIGTERM)
}

// PostgreSQL (durable defaults), one instance and then two behind nginx sharing a blob directory.
do {
    let database = try PostgresServer.running(durable: true).makeDatabase()
    let shared = ["--database-url", database, "--blob-dir", "\(workDirectory)/pg-blobs"]
    let first = try startCollector("\(workDirectory)/pg-a", arguments: shared)
    _ = try await measure(
        name: "warm-up", bundles: try makeBundles(count: 200, targetBytes: 10_000), clients: 16,
        baseURL: first.baseURL, key: first.ingestKey, collectors: [first])
    measurements.append(
        try await measure(
            name: "10 KB bundles, PostgreSQL", bundles: try makeBundles(count: 3_000, targetBytes: 10_000), clients: 64,
            baseURL: first.baseURL, key: first.ingestKey, collectors: [first]))
    let second = try startCollector("\(workDirectory)/pg-b", arguments: shared)
    let ports = [first.baseURL, second.baseURL].compactMap { URL(string: $0)?.port }
    let nginx = try LocalNginx(directory: "\(workDirectory)/nginx", upstreams: ports)
    // Peak RSS in this row is the larger of the two instances.
    measurements.append(
        try await measure(
            name: "10 KB bundles, PostgreSQL, 2 instances + nginx",
            bundles: try makeBundles(count: 3_000, targetBytes: 10_000), clients: 64,
            baseURL: "http://127.0.0.1:\(nginx.port)", key: first.ingestKey, collectors: [first, second]))
    nginx.stop()
    second.kill(SIGTERM)
    first.kill(SIGTERM)
} catch {
    print("PostgreSQL rows skipped: \(error)")
}

print("| workload | clients | uploads | errors | bundle | uploads/s | MB/s | p50 ms | p99 ms | peak RSS MiB |")
print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
for m in measurements {
    print(
        String(
            format: "| %@ | %d | %d | %d | %d B | %.0f | %.1f | %.1f | %.1f | %.0f |", m.name, m.clients, m.uploads,
            m.errors,
            m.meanBundleBytes, m.uploadsPerSecond, m.megabytesPerSecond, m.p50Milliseconds, m.p99Milliseconds,
            m.collectorPeakRSSMiB))
}
let smallRun = measurements[0]
let largeRun = measurements[1]
print(
    String(
        format: "10 KB: %.0f uploads/s (bar ≥ 1000), %.2f× the bare durable-write rate", smallRun.uploadsPerSecond,
        smallRun.uploadsPerSecond / bare))
print(
    String(
        format: "5 MB: %.0f MB/s = %.0f%% of dd (bar ≥ 50%%)", largeRun.megabytesPerSecond,
        100 * largeRun.megabytesPerSecond / dd))
if let output {
    struct Report: Codable {
        var ddMegabytesPerSecond: Double
        var bareDurableWritesPerSecond: Double
        var measurements: [Measurement]
    }
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
    try encoder.encode(Report(ddMegabytesPerSecond: dd, bareDurableWritesPerSecond: bare, measurements: measurements))
        .write(to: URL(fileURLWithPath: output))
}
