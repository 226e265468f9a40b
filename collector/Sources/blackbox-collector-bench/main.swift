import AsyncHTTPClient
import BlackboxCollector
import BlackboxCompression
import BlackboxFormat
import BlackboxOTLP
import BlackboxTestSupport
import CollectorTestSupport
import Foundation
import NIOCore
import ZIPFoundation

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
// BENCH_KEEP=1 keeps the work directory. Deleting thousands of files makes the next run's file
// creations slow for minutes on an ext4 without a journal (the inode allocator skips recently
// deleted inodes one by one), which matters when runs follow each other.
if ProcessInfo.processInfo.environment["BENCH_KEEP"] == nil {
    atexit { try? FileManager.default.removeItem(atPath: workDirectory) }
}

/// The Python peers' interpreter (`make python-peers`): `BLACKBOX_PYTHON`, else the repository's `.venv`.
let pythonPeers =
    ProcessInfo.processInfo.environment["BLACKBOX_PYTHON"]
    ?? URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent(".venv/bin/python").path

// MARK: Disk baselines

/// The median of five `dd ... conv=fdatasync` runs of 256 MiB, and all five.
///
/// One run was not enough on this VM: the first write into memory the guest has not touched lately
/// costs the host a fault per page (free pages are reported back to it), which made single runs
/// range from 211 to 2,360 MB/s. Later runs reuse the pages the previous one freed, as the collector
/// reuses those of the blobs it drops from the cache, so the median measures the disk.
func ddBandwidth() throws -> (median: Double, runs: [Double]) {
    let runs = try (0..<5).map { _ in try ddOnce() }
    return (runs.sorted()[2], runs)
}

func ddOnce() throws -> Double {
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
/// A baseline from before per-project upload slots (2026-11-24) refuses that limit by name and admits
/// every upload anyway: it is started without it.
func startCollector(_ dataDirectory: String, arguments: [String] = [], environment: [String: String] = [:]) throws
    -> CollectorProcess
{
    let collector = try CollectorProcess(
        dataDirectory: dataDirectory, arguments: ["--retention-days", "0"] + arguments, environment: environment,
        executable: collectorBinary)
    let perProjectSlots = ["--limit", "maxConcurrentUploadsPerProject=64"]
    guard collector.baseURL.isEmpty, arguments.starts(with: perProjectSlots) else { return collector }
    return try CollectorProcess(
        dataDirectory: dataDirectory, arguments: ["--retention-days", "0"] + arguments.dropFirst(2),
        environment: environment, executable: collectorBinary)
}

/// A collector for the 10 KB rows, warmed up (connections, SQLite pages) with 200 uploads. 64
/// connections upload into one project, so its per-project upload slots (16 by default, a bound
/// against one tenant's flood) are raised to 64: the rows measure ingest, not refusals.
func startWarmCollector(_ dataDirectory: String) async throws -> (collector: CollectorProcess, database: String) {
    let collector = try startCollector(dataDirectory, arguments: ["--limit", "maxConcurrentUploadsPerProject=64"])
    _ = try await measure(
        name: "warm-up", bundles: try makeBundles(count: 200, targetBytes: 10_000), clients: 16,
        baseURL: collector.baseURL, key: collector.ingestKey, collectors: [collector])
    return (collector, "\(dataDirectory)/collector.sqlite")
}

// MARK: Workload

/// How the log travels inside the bundle zip.
enum LogPacking {
    /// A plain text log, deflated by the zip (what `zip` or a bundle with the active log makes).
    case deflated
    /// A `.log.gz` archive stored as it is (what the uploader makes of rotated, compressed logs):
    /// the collector checks its CRC-32 and sha256 but has nothing to inflate at ingest (one log a
    /// bundle fits the indexing budget, so its lines are not counted).
    case storedGzip
}

/// Distinct bundles (distinct content, so none is a duplicate): a report in every tenth, and a log of
/// random text in lines of about 100 bytes, sized to land near `targetBytes` as a zip.
func makeBundles(count: Int, targetBytes: Int, packing: LogPacking = .deflated) throws -> [Data] {
    var generator = SystemRandomNumberGenerator()
    let hex = Array("0123456789abcdef".utf8)
    // Random hex compresses about 2:1 under deflate.
    let logBytes = targetBytes * 2
    let shared = (0..<logBytes).map { index in
        index % 100 == 99 ? UInt8(ascii: "\n") : hex[Int(UInt8.random(in: 0...15, using: &generator))]
    }
    let sharedGzip = packing == .storedGzip ? try gzip(Data(shared)) : Data()
    return try (0..<count).map { index in
        let header = Data("bundle \(index) \(UUID().uuidString)\n".utf8)
        let report = index % 10 == 0 ? [benchReport(index)] : []
        let log: (name: String, contents: Data)
        switch packing {
        case .deflated:
            var text = header
            let rotation = (index * 7919) % max(1, shared.count)
            text.append(contentsOf: shared[rotation...])
            text.append(contentsOf: shared[..<rotation])
            log = ("bench.log", text)
        case .storedGzip:
            // Concatenated gzip members are one valid gzip file: a small distinct one, then the shared one.
            log = ("bench-\(index).log.gz", storedGzipMember(header) + sharedGzip)
        }
        return try BundleArchive.make(
            app: .init(name: "bench", version: "1.0"), host: "bench", reports: report, logs: [log])
    }
}

/// `gzip -6` of the data, through the system's gzip.
func gzip(_ data: Data) throws -> Data {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/bin/gzip")
    process.arguments = ["-6", "-c"]
    let input = Pipe()
    let output = Pipe()
    process.standardInput = input
    process.standardOutput = output
    try process.run()
    let writer = Thread {
        input.fileHandleForWriting.write(data)
        try? input.fileHandleForWriting.close()
    }
    writer.start()
    let compressed = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return compressed
}

/// A gzip member holding `data` in stored deflate blocks (no compression needed for a short header).
func storedGzipMember(_ data: Data) -> Data {
    var member = Data([0x1F, 0x8B, 0x08, 0, 0, 0, 0, 0, 0, 0xFF])
    func littleEndian<T: FixedWidthInteger>(_ value: T) -> Data { withUnsafeBytes(of: value.littleEndian) { Data($0) } }
    var offset = 0
    repeat {
        let length = min(65_535, data.count - offset)
        let final = offset + length == data.count
        member.append(final ? 1 : 0)
        member.append(littleEndian(UInt16(length)))
        member.append(littleEndian(~UInt16(length)))
        member.append(data[offset..<offset + length])
        offset += length
    } while offset < data.count
    member.append(littleEndian(data.crc32(checksum: 0)))
    member.append(littleEndian(UInt32(truncatingIfNeeded: data.count)))
    return member
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
    /// From the last answer until every uploaded log file was in the search index (SQLite rows).
    var indexCatchUpSeconds: Double?
    /// For OTLP rows: log records per request, and so per second.
    var recordsPerUpload: Int? = nil
    var recordsPerSecond: Double? { recordsPerUpload.map { Double($0) * uploadsPerSecond } }
}

/// Uploads every bundle once through `baseURL` (a collector, or a load balancer in front of some).
///
/// Closed loop by default: each client sends its next upload as soon as the previous one is answered,
/// which finds the most uploads per second, and latency there is mostly queueing (64 clients at
/// `n` uploads/s wait 64/`n` s on average, by Little's law). With `offeredRate`, open loop: upload `i`
/// is due at `i / offeredRate` s whatever happened before, and its latency counts from when it was
/// due, so a stall is not hidden by clients that wait for it (no coordinated omission).
func measure(
    name: String, bundles: [Data], clients: Int, baseURL: String, key: String, collectors: [CollectorProcess],
    offeredRate: Double? = nil, indexDatabase: String? = nil
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
                    var begin = ContinuousClock.now
                    if let offeredRate {
                        let due = started + .nanoseconds(Int64(Double(index) / offeredRate * 1e9))
                        if due > begin { try await Task.sleep(until: due) }
                        begin = due
                    }
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
    let indexCatchUp = try await indexCatchUpSeconds(indexDatabase)
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
        collectorPeakRSSMiB: collectors.map(\.peakRSS).max() ?? 0, indexCatchUpSeconds: indexCatchUp)
}

/// Seconds from now until every uploaded log file is in the search index (SQLite rows).
func indexCatchUpSeconds(_ indexDatabase: String?) async throws -> Double? {
    guard let indexDatabase else { return nil }
    let store = try SQLiteStore(path: indexDatabase)
    let ended = ContinuousClock.now
    while try await !store.unindexedLogFiles(limit: 1).isEmpty { try await Task.sleep(for: .milliseconds(100)) }
    let waited = ContinuousClock.now - ended
    return Double(waited.components.seconds) + Double(waited.components.attoseconds) / 1e18
}

/// Uploads driven by wrk (`collector/bench/wrk-upload.lua`) instead of AsyncHTTPClient: a C client
/// on one thread takes far less of the two cores than the Swift one, so the collector gets about
/// what a remote client would leave it. Closed loop, or open loop at `offeredRate` (latency from
/// when each upload was due, as in `measure`). wrk runs for `seconds`; `bundles` must outlast it
/// (the row says so if they did not).
func measureWithWrk(
    name: String, bundles: [Data], connections: Int, seconds: Int, offeredRate: Double? = nil,
    collector: CollectorProcess, through balancer: LoadBalanced? = nil, indexDatabase: String?
) async throws -> Measurement {
    try await measureWithWrk(
        name: name, bodies: try WrkBodies(bundles), connections: connections, seconds: seconds,
        offeredRate: offeredRate, collector: collector, through: balancer, indexDatabase: indexDatabase)
}

/// Instances behind a load balancer: wrk sends to `url`; the row's peak RSS is the largest instance's.
struct LoadBalanced {
    var url: String
    var instances: [CollectorProcess]
}

/// Bundles written once as wrk's request bodies, so that rows on several collectors share them.
struct WrkBodies {
    var directory: String
    var count: Int
    var meanBytes: Int
    /// `bundles` (zip), `sentry` (gzip-compressed envelopes) or `otlp` (gzip-compressed OTLP logs
    /// requests in protobuf): what `wrk-upload.lua` sends.
    var wrkProtocol = "bundles"
    /// Log records in each body (OTLP's), for the row's records/s.
    var recordsPerBody: Int? = nil

    init(_ bundles: [Data], fileExtension: String = "zip") throws {
        directory = "\(workDirectory)/wrk-bodies-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        for (index, bundle) in bundles.enumerated() {
            try bundle.write(to: URL(fileURLWithPath: "\(directory)/\(index).\(fileExtension)"))
        }
        count = bundles.count
        meanBytes = bundles.reduce(0) { $0 + $1.count } / max(1, bundles.count)
        Self.flushToDisk()
    }

    /// Writes the bodies back before a row starts. The collector's group commit flushes the whole file
    /// system (`syncfs`) for a batch of more than four uploads, so the driver's freshly written bodies
    /// were written back inside the measured row: a 185-223 ms `syncfs` at the start of the Sentry row
    /// (strace, 2026-11-28), which set the row's p99.
    static func flushToDisk() { sync() }

    /// `count` Sentry error events as sentry-python sends them (gzip-compressed envelopes, about 5 KB
    /// of JSON each, fresh event ids), made by the pinned sentry-sdk (`collector/bench/sentry-event.py`).
    static func sentryEvents(count: Int) throws -> WrkBodies {
        let directory = "\(workDirectory)/wrk-sentry-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("bench/sentry-event.py").path
        let (status, output) = try ChildRun.run(pythonPeers, [script, directory, String(count)])
        guard status == 0 else {
            throw CocoaError(
                .fileReadCorruptFile,
                userInfo: [
                    NSLocalizedDescriptionKey: "sentry-event.py failed: \(String(decoding: output, as: UTF8.self))"
                ])
        }
        let sizes = (0..<count).map { (try? fileSize("\(directory)/\($0).envelope.gz")) ?? 0 }
        // `init` writes no body here; it flushes the files the script wrote.
        var bodies = try WrkBodies([])
        bodies.directory = directory
        bodies.count = count
        bodies.meanBytes = sizes.reduce(0, +) / max(1, count)
        bodies.wrkProtocol = "sentry"
        return bodies
    }
}

extension WrkBodies {
    /// `count` OTLP logs requests as OpenTelemetry's Python exporter sends them from `logging`
    /// (protobuf, gzip): one resource (`service.*`, `telemetry.sdk.*`), one scope, `records` records
    /// of a sentence each with a trace context and the code attributes its handler adds.
    static func otlpLogs(count: Int, records: Int) throws -> WrkBodies {
        let directory = "\(workDirectory)/wrk-otlp-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        var total = 0
        for index in 0..<count {
            var resource = Opentelemetry_Proto_Logs_V1_ResourceLogs()
            resource.resource.attributes = [
                OTLPKeyValue("service.name", "checkout"), OTLPKeyValue("service.version", "2.3.1"),
                OTLPKeyValue("telemetry.sdk.language", "python"), OTLPKeyValue("telemetry.sdk.name", "opentelemetry"),
                OTLPKeyValue("telemetry.sdk.version", "1.45.2"),
            ]
            var scope = Opentelemetry_Proto_Logs_V1_ScopeLogs()
            scope.scope.name = "payments"
            let start = UInt64(Date().timeIntervalSince1970 * 1e9)
            scope.logRecords = (0..<records).map { number in
                var record = OTLPLogRecord()
                record.timeUnixNano = start + UInt64(number) * 1_000
                record.observedTimeUnixNano = record.timeUnixNano + 500
                record.severityNumber = number % 10 == 0 ? .error : .info
                record.severityText = number % 10 == 0 ? "ERROR" : "INFO"
                record.body.stringValue =
                    "charged order \(index)-\(number) for customer \(number * 7919 % 10_000) in 3 items"
                record.traceID = Data((0..<16).map { _ in UInt8.random(in: 0...255) })
                record.spanID = Data((0..<8).map { _ in UInt8.random(in: 0...255) })
                record.flags = 1
                record.attributes = [
                    OTLPKeyValue("code.file.path", "/srv/checkout/payments.py"),
                    OTLPKeyValue("code.function.name", "charge"),
                    OTLPKeyValue("code.line.number", "\(40 + number % 30)"),
                    OTLPKeyValue("order", "\(index)-\(number)"),
                ]
                return record
            }
            resource.scopeLogs = [scope]
            var request = OTLPLogsRequest()
            request.resourceLogs = [resource]
            let body = Data(try GzipData.compress(Array(try request.encoded(.protobuf))))
            total += body.count
            try body.write(to: URL(fileURLWithPath: "\(directory)/\(index).otlp.gz"))
        }
        var bodies = try WrkBodies([])
        bodies.directory = directory
        bodies.count = count
        bodies.meanBytes = total / max(1, count)
        bodies.wrkProtocol = "otlp"
        bodies.recordsPerBody = records
        return bodies
    }
}

func fileSize(_ path: String) throws -> Int {
    (try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
}

func measureWithWrk(
    name: String, bodies: WrkBodies, connections: Int, seconds: Int, offeredRate: Double? = nil,
    collector: CollectorProcess, through balancer: LoadBalanced? = nil, indexDatabase: String?
) async throws -> Measurement {
    // collector/bench/wrk-upload.lua, next to this package's Sources.
    let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("bench/wrk-upload.lua").path
    let wrk = Process()
    wrk.executableURL = URL(fileURLWithPath: "/usr/bin/wrk")
    wrk.arguments = [
        "-t1", "-c\(connections)", "-d\(seconds)s", "--timeout", "60s", "-s", script,
        balancer?.url ?? collector.baseURL,
    ]
    var environment = ProcessInfo.processInfo.environment
    environment["BENCH_KEY"] = collector.ingestKey
    environment["BENCH_BODIES"] = bodies.directory
    environment["BENCH_COUNT"] = "\(bodies.count)"
    environment["BENCH_RATE"] = offeredRate.map { "\($0)" }
    environment["BENCH_RUN_ID"] = String(format: "%08x", UInt32.random(in: 0...UInt32.max))
    environment["BENCH_PROTOCOL"] = bodies.wrkProtocol
    wrk.environment = environment
    let output = Pipe()
    wrk.standardOutput = output
    try wrk.run()
    let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    wrk.waitUntilExit()
    struct WrkResult: Decodable {
        var requests: Int
        var created: Int
        var answered: Int
        var socketErrors: Int
        var seconds: Double
        var p50Milliseconds: Double
        var p99Milliseconds: Double
    }
    guard wrk.terminationStatus == 0, let line = text.split(separator: "\n").last(where: { $0.hasPrefix("{") }) else {
        throw CocoaError(.fileReadCorruptFile, userInfo: [NSLocalizedDescriptionKey: "wrk failed: \(text)"])
    }
    let result = try JSONDecoder().decode(WrkResult.self, from: Data(line.utf8))
    if result.answered >= bodies.count {
        print("warning: \(name): wrk ran out of bundles before \(seconds) s; uploads/s is understated")
    }
    let meanBytes = bodies.meanBytes
    return Measurement(
        name: name, clients: connections, uploads: result.answered,
        errors: result.answered - result.created + result.socketErrors, meanBundleBytes: meanBytes,
        seconds: result.seconds, uploadsPerSecond: Double(result.created) / result.seconds,
        megabytesPerSecond: Double(result.created * meanBytes) / result.seconds / 1_000_000,
        p50Milliseconds: result.p50Milliseconds, p99Milliseconds: result.p99Milliseconds,
        collectorPeakRSSMiB: (balancer?.instances ?? [collector]).map(\.peakRSS).max() ?? collector.peakRSS,
        indexCatchUpSeconds: try await indexCatchUpSeconds(indexDatabase), recordsPerUpload: bodies.recordsPerBody)
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

let (dd, ddRuns) = try ddBandwidth()
let bare = bareDurableWrites()
print(
    String(
        format: "disk: dd conv=fdatasync %.0f MB/s (median of %@); bare write+fsync+rename of 10 KB: %.0f files/s", dd,
        ddRuns.map { String(format: "%.0f", $0) }.joined(separator: ", "), bare))

// BENCH_ROWS=small,large,flood,symbols,postgres,bucket (default: all) runs a subset while investigating;
// `sentry` and `open` (not in the default) run the Sentry row and the open-loop row alone.
// The small rows include the Sentry envelope row (it needs `make python-peers`).
let rows = Set(
    (ProcessInfo.processInfo.environment["BENCH_ROWS"] ?? "small,large,flood,symbols,postgres,bucket").split(
        separator: ","
    )
    .map(
        String.init)
)
var measurements: [Measurement] = []
// The 10 KB rows: wrk as the client, closed loop (the most uploads per second; latency there is
// mostly queueing: 64 clients at n uploads/s wait 64/n s on average, by Little's law) and open loop
// at BENCH_OFFERED_RATE (default 1,000/s, the throughput bar) for the latency an app sees when the
// collector is not overrun. Then the closed loop again with the Swift client, as earlier notes measured.
let offered = Double(ProcessInfo.processInfo.environment["BENCH_OFFERED_RATE"] ?? "") ?? 1_000
if rows.contains("small") {
    let (collector, database) = try await startWarmCollector("\(workDirectory)/small")
    measurements.append(
        try await measureWithWrk(
            name: "10 KB bundles", bundles: try makeBundles(count: 24_000, targetBytes: 10_000), connections: 64,
            seconds: 6, collector: collector, indexDatabase: database))
    measurements.append(
        try await measureWithWrk(
            name: "10 KB bundles, open loop at \(Int(offered))/s",
            bundles: try makeBundles(count: Int(offered * 6.5), targetBytes: 10_000), connections: 64, seconds: 6,
            offeredRate: offered, collector: collector, indexDatabase: database))
    measurements.append(
        try await measure(
            name: "10 KB bundles, AsyncHTTPClient client", bundles: try makeBundles(count: 6_000, targetBytes: 10_000),
            clients: 64, baseURL: collector.baseURL, key: collector.ingestKey, collectors: [collector],
            indexDatabase: database))
    // Last, as the same collector holds the 10 KB bundles: Sentry error events (Bugsink documents 30
    // events/s of 50 KB on 2 vCPU). After the 10 KB rows, not between them: the thousands of events
    // it stores and the work they leave lengthened the open-loop row's tail that followed it, so the
    // 10 KB rows run as they did before the Sentry row existed (and compare with builds from then).
    measurements.append(
        try await measureWithWrk(
            name: "5 KB Sentry error events (sentry-python, gzip)", bodies: try WrkBodies.sentryEvents(count: 30_000),
            connections: 64, seconds: 6, collector: collector, indexDatabase: nil))
    // OTLP logs beside the bundles' logs: requests of 100 records, as an exporter batches them.
    measurements.append(
        try await measureWithWrk(
            name: "OTLP logs, 100 records a request (protobuf, gzip)",
            bodies: try WrkBodies.otlpLogs(count: 12_000, records: 100), connections: 64, seconds: 6,
            collector: collector, indexDatabase: nil))
    collector.kill(SIGTERM)
}
// The OTLP row alone, on a collector of its own (`BENCH_ROWS=otlp`), with the search index's
// catch-up: every record is a line to index.
if rows.contains("otlp") {
    let (collector, database) = try await startWarmCollector("\(workDirectory)/otlp")
    measurements.append(
        try await measureWithWrk(
            name: "OTLP logs, 100 records a request (protobuf, gzip), alone",
            bodies: try WrkBodies.otlpLogs(count: 12_000, records: 100), connections: 64, seconds: 6,
            collector: collector, indexDatabase: database))
    collector.kill(SIGTERM)
}
// The 5 MB rows: wrk, 8 connections, closed loop for 3 s, each packing on a collector of its own so
// that one row's indexing does not run in the next. Index catch-up is not waited for: a few hundred
// 5 MB logs take minutes to index, in the background.
if rows.contains("large") {
    for (packing, name, count) in [(LogPacking.storedGzip, "stored .log.gz", 450), (.deflated, "deflated log", 200)] {
        let bundles = try makeBundles(count: count, targetBytes: 5_000_000, packing: packing)
        let collector = try startCollector("\(workDirectory)/large-\(measurements.count)")
        measurements.append(
            try await measureWithWrk(
                name: "5 MB bundles, \(name)", bundles: bundles, connections: 8, seconds: 3, collector: collector,
                indexDatabase: nil))
        collector.kill(SIGTERM)
    }
}

// The Sentry row alone, on a collector of its own (no index catch-up of earlier rows beside it):
// `BENCH_ROWS=sentry`, while investigating the Sentry path.
if rows.contains("sentry") {
    let collector = try startCollector(
        "\(workDirectory)/sentry", arguments: ["--limit", "maxConcurrentUploadsPerProject=64"])
    // Warm-up with events of their own (the same bytes again would be duplicates), as the 10 KB
    // rows have one: connections, SQLite pages, the events' group and release.
    _ = try await measureWithWrk(
        name: "warm-up", bodies: try WrkBodies.sentryEvents(count: 500), connections: 16, seconds: 1,
        collector: collector, indexDatabase: nil)
    measurements.append(
        try await measureWithWrk(
            name: "5 KB Sentry error events (sentry-python, gzip), alone",
            bodies: try WrkBodies.sentryEvents(count: 30_000),
            connections: 64, seconds: 6, collector: collector, indexDatabase: nil))
    collector.kill(SIGTERM)
}

// The open-loop row alone, on a collector of its own: the tail an app sees at BENCH_OFFERED_RATE
// without the closed-loop rows' stored bundles and index backlog beside it (`BENCH_ROWS=open`; in the
// small rows it follows them on one collector, which confounds build-to-build comparisons).
if rows.contains("open") {
    let (collector, database) = try await startWarmCollector("\(workDirectory)/open")
    measurements.append(
        try await measureWithWrk(
            name: "10 KB bundles, open loop at \(Int(offered))/s, alone",
            bundles: try makeBundles(count: Int(offered * 6.5), targetBytes: 10_000), connections: 64, seconds: 6,
            offeredRate: offered, collector: collector, indexDatabase: database))
    collector.kill(SIGTERM)
}

// Honest uploads while others flood the collector with work (issue 16: nothing stalls ingest for
// more than a few seconds): six clients send bundles of ~30 MiB of crash reports (each inspected,
// decoded, encoded and stored in full) back to back, while one app's 10 KB uploads arrive open loop
// at 20/s. The row's latencies are the honest uploads'.
if rows.contains("flood") {
    let collector = try startCollector("\(workDirectory)/flood")
    let heavy = try (0..<6).map { _ in try reportsNearTheBundleLimit() }
    let flooding = ManagedCounter()
    let flood = Task {
        await withTaskGroup(of: Void.self) { group in
            for bundle in heavy {
                group.addTask {
                    while !Task.isCancelled {
                        var request = HTTPClientRequest(url: "\(collector.baseURL)/api/v1/bundles")
                        request.method = .POST
                        request.headers.add(name: "Authorization", value: "Bearer \(collector.ingestKey)")
                        request.headers.add(name: "Upload-Id", value: UUID().uuidString)
                        request.body = .bytes(ByteBuffer(bytes: bundle))
                        if let response = try? await HTTPClient.shared.execute(request, timeout: .seconds(300)) {
                            _ = try? await response.body.collect(upTo: 1 << 20)
                            _ = flooding.increment()
                        }
                    }
                }
            }
        }
    }
    // Let the flood build up before measuring.
    try await Task.sleep(for: .seconds(2))
    var honest = try await measure(
        name: "10 KB bundles at 20/s, open loop, beside 6 clients sending 30 MiB of reports each",
        bundles: try makeBundles(count: 300, targetBytes: 10_000), clients: 8, baseURL: collector.baseURL,
        key: collector.ingestKey, collectors: [collector], offeredRate: 20)
    flood.cancel()
    await flood.value
    honest.clients = 8 + 6
    measurements.append(honest)
    print(
        String(
            format: "flood: %d heavy uploads answered meanwhile; honest p50 %.0f ms, p99 %.0f ms (bar: a few seconds)",
            flooding.increment(), honest.p50Milliseconds, honest.p99Milliseconds))
    collector.kill(SIGTERM)
}

/// Four reports of just under 8 MiB of hex each (hex deflates only about 2×, so the inflation ratio
/// stays low): about 30 MiB of reports in one bundle, under the per-bundle limit.
func reportsNearTheBundleLimit() throws -> Data {
    var generator = SystemRandomNumberGenerator()
    let digits = Array("0123456789abcdef".utf8)
    let reports = (0..<4).map { index in
        var report = benchReport(index)
        let padding = (0..<(7 << 20)).map { _ in digits[Int((generator.next() as UInt8) & 0xF)] }
        report.metadata = ["padding": String(decoding: padding, as: UTF8.self)]
        return report
    }
    return try BundleArchive.make(app: .init(name: "bench"), host: "bench", reports: reports)
}

// PostgreSQL (durable defaults), one instance and then two behind nginx sharing a blob directory.
if rows.contains("postgres") {
    do {
        let database = try await PostgresServer.makeDatabase(durable: true)
        let shared = ["--database-url", database, "--blob-dir", "\(workDirectory)/pg-blobs"]
        let first = try startCollector("\(workDirectory)/pg-a", arguments: shared)
        _ = try await measure(
            name: "warm-up", bundles: try makeBundles(count: 200, targetBytes: 10_000), clients: 16,
            baseURL: first.baseURL, key: first.ingestKey, collectors: [first])
        measurements.append(
            try await measure(
                name: "10 KB bundles, PostgreSQL", bundles: try makeBundles(count: 3_000, targetBytes: 10_000),
                clients: 64,
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
}

// PostgreSQL and an S3 bucket (a real SeaweedFS), no shared directory (issue 51): 10 KB uploads on one
// instance, then on two and three behind nginx, closed loop; the scale-out goal, open loop at
// BENCH_BUCKET_RATE (default 500/s) across three; and 5 MB uploads on one instance and on two.
if rows.contains("bucket") || rows.contains("bucket-large") {
    do {
        measurements += try await measureBucketRows(largeOnly: !rows.contains("bucket"))
    } catch {
        print("PostgreSQL + bucket rows skipped: \(error)")
    }
}

/// `largeOnly` (`BENCH_ROWS=bucket-large`): the 5 MB rows alone, on a bucket and database the 10 KB rows
/// have not filled first.
func measureBucketRows(largeOnly: Bool) async throws -> [Measurement] {
    var measurements: [Measurement] = []
    let seaweed = try await SeaweedServer.running()
    let bucket = "bench-\(getpid())"
    try seaweed.createBucket(bucket, python: pythonPeers)
    let database = try await PostgresServer.makeDatabase(durable: true)
    let shared = [
        "--limit", "maxConcurrentUploadsPerProject=64", "--database-url", database, "--blob-url",
        "s3://\(bucket)/blobs",
    ]
    var instances: [CollectorProcess] = []
    var nginx: LocalNginx?
    defer {
        nginx?.stop()
        for instance in instances { instance.kill(SIGTERM) }
    }
    /// `count` instances; one is sent to directly, more through nginx.
    func scale(to count: Int) throws -> LoadBalanced {
        while instances.count < count {
            instances.append(
                try startCollector(
                    "\(workDirectory)/bucket-\(instances.count)", arguments: shared, environment: seaweed.environment))
        }
        nginx?.stop()
        nginx = nil
        guard count > 1 else { return LoadBalanced(url: instances[0].baseURL, instances: [instances[0]]) }
        nginx = try LocalNginx(
            directory: "\(workDirectory)/bucket-nginx-\(count)",
            upstreams: instances.compactMap { URL(string: $0.baseURL)?.port })
        return LoadBalanced(url: "http://127.0.0.1:\(nginx?.port ?? 0)", instances: instances)
    }
    let alone = try scale(to: 1)
    if !largeOnly {
        measurements += try await measureSmallBucketRows(alone: alone, scale: scale)
    }
    let large = try WrkBodies(makeBundles(count: 160, targetBytes: 5_000_000, packing: .storedGzip))
    measurements.append(
        try await measureWithWrk(
            name: "5 MB bundles, PostgreSQL + bucket", bodies: large, connections: 8, seconds: 3,
            collector: instances[0], through: alone, indexDatabase: nil))
    measurements.append(
        try await measureWithWrk(
            name: "5 MB bundles, PostgreSQL + bucket, 2 instances + nginx",
            bodies: try WrkBodies(makeBundles(count: 160, targetBytes: 5_000_000, packing: .storedGzip)),
            connections: 8,
            seconds: 3, collector: instances[0], through: try scale(to: 2), indexDatabase: nil))
    return measurements
}

/// The 10 KB rows of `measureBucketRows`: one instance (`alone`), then two and three behind nginx
/// (`scale`), then open loop across three.
func measureSmallBucketRows(alone: LoadBalanced, scale: (Int) throws -> LoadBalanced) async throws -> [Measurement] {
    var measurements: [Measurement] = []
    let first = alone.instances[0]
    _ = try await measureWithWrk(
        name: "warm-up", bundles: try makeBundles(count: 200, targetBytes: 10_000), connections: 16, seconds: 1,
        collector: first, through: alone, indexDatabase: nil)
    measurements.append(
        try await measureWithWrk(
            name: "10 KB bundles, PostgreSQL + bucket", bundles: try makeBundles(count: 8_000, targetBytes: 10_000),
            connections: 64, seconds: 6, collector: first, through: alone, indexDatabase: nil))
    for count in [2, 3] {
        measurements.append(
            try await measureWithWrk(
                name: "10 KB bundles, PostgreSQL + bucket, \(count) instances + nginx",
                bundles: try makeBundles(count: 8_000, targetBytes: 10_000), connections: 64, seconds: 6,
                collector: first, through: try scale(count), indexDatabase: nil))
    }
    let rate = Double(ProcessInfo.processInfo.environment["BENCH_BUCKET_RATE"] ?? "") ?? 500
    measurements.append(
        try await measureWithWrk(
            name: "10 KB bundles, open loop at \(Int(rate))/s, PostgreSQL + bucket, 3 instances + nginx",
            bundles: try makeBundles(count: Int(rate * 6.5), targetBytes: 10_000), connections: 64, seconds: 6,
            offeredRate: rate, collector: first, through: try scale(3), indexDatabase: nil))
    return measurements
}

// Symbolication on the collector (SymbolicationRows.swift).
var symbolication: SymbolicationBench.Results?
if rows.contains("symbols") {
    let results = try await SymbolicationBench.run(workDirectory: workDirectory)
    measurements += zip(results.smallAlone, results.smallBesideSymbolication).flatMap { [$0, $1] }
    symbolication = results
    print(
        String(
            format:
                "symbolication: ack → symbolicated p50 %.0f ms, p99 %.0f ms (%d reports of %d frames in %d images at 50/s, symbols cached); late symbols: %d reports at %.0f reports/s",
            results.ackToSymbolicatedP50Milliseconds, results.ackToSymbolicatedP99Milliseconds,
            results.latencyReports, SymbolicationBench.framesPerReport, SymbolicationBench.images, results.lateReports,
            results.lateSymbolicatedPerSecond))
    let pairs = zip(results.smallAlone, results.smallBesideSymbolication).map {
        String(format: "%.0f/%.0f", $1.uploadsPerSecond, $0.uploadsPerSecond)
    }
    print(
        String(
            format:
                "symbolication: 10 KB row beside symbolication / with the backlog waiting, median of 3 pairs = %.3f (%+.1f%%, bar: at most -5%%); pairs beside/alone %@; reports symbolicated during each beside row %@ of %d",
            results.besideOverAlone, 100 * (results.besideOverAlone - 1), pairs.joined(separator: ", "),
            results.symbolicatedDuringSmallRow.map(String.init).joined(separator: ", "), results.backlogReports))
}

print(
    "| workload | clients | uploads | errors | bundle | uploads/s | MB/s | p50 ms | p99 ms | peak RSS MiB | index catch-up s |"
)
print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
for m in measurements {
    print(
        String(
            format: "| %@ | %d | %d | %d | %d B | %.0f | %.1f | %.1f | %.1f | %.0f | %@ |", m.name, m.clients,
            m.uploads,
            m.errors,
            m.meanBundleBytes, m.uploadsPerSecond, m.megabytesPerSecond, m.p50Milliseconds, m.p99Milliseconds,
            m.collectorPeakRSSMiB, m.indexCatchUpSeconds.map { String(format: "%.1f", $0) } ?? "-"))
}
for otlpRun in measurements {
    guard let records = otlpRun.recordsPerSecond else { continue }
    print(
        String(
            format: "%@: %.0f records/s (%.0f requests/s), p99 %.1f ms", otlpRun.name, records,
            otlpRun.uploadsPerSecond, otlpRun.p99Milliseconds))
}
if let smallRun = measurements.first(where: { $0.name == "10 KB bundles" }) {
    print(
        String(
            format: "10 KB: %.0f uploads/s (bar ≥ 1000), %.2f× the bare durable-write rate", smallRun.uploadsPerSecond,
            smallRun.uploadsPerSecond / bare))
}
// The bar is the local disk's: a bucket row's bytes go through SeaweedFS on the same machine.
for largeRun in measurements where largeRun.name.hasPrefix("5 MB") && !largeRun.name.contains("bucket") {
    print(
        String(
            format: "%@: %.0f MB/s = %.0f%% of dd (bar ≥ 50%%)", largeRun.name, largeRun.megabytesPerSecond,
            100 * largeRun.megabytesPerSecond / dd))
}
if let output {
    struct Report: Codable {
        /// The median of `ddRunsMegabytesPerSecond`.
        var ddMegabytesPerSecond: Double
        var ddRunsMegabytesPerSecond: [Double]
        var bareDurableWritesPerSecond: Double
        var measurements: [Measurement]
        var symbolication: SymbolicationBench.Results?
    }
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
    try encoder.encode(
        Report(
            ddMegabytesPerSecond: dd, ddRunsMegabytesPerSecond: ddRuns, bareDurableWritesPerSecond: bare,
            measurements: measurements, symbolication: symbolication)
    )
    .write(to: URL(fileURLWithPath: output))
}
