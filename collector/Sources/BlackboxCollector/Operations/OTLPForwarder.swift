import AsyncHTTPClient
import BlackboxCompression
import BlackboxOTLP
import Foundation
import Logging
import NIOCore
import ServiceLifecycle
import Synchronization

/// Sends the log lines the collector ingests (bundles' log files, Sentry SDKs' logs) on to a team's
/// OTLP/HTTP endpoint (Loki's `/otlp/v1/logs`, an OpenTelemetry Collector, Elastic), so that the place
/// where all their logs live has these too (`OTLPForwarding` configures it; docs/otlp.md).
///
/// The log indexer offers each file's lines once it stored them. They wait in memory, at most
/// `maxQueuedRecords` and `maxQueuedBytes` (lines past either are dropped, counted and said once per
/// burst), and go in
/// requests of at most `maxRecordsPerRequest`, protobuf with gzip. A request the endpoint could not
/// take (no connection, a timeout, 429, 5xx) is sent again after a backoff (its `Retry-After` when
/// it gives one), the same request, so nothing is reordered; one it refuses (another 4xx) is dropped
/// and counted. At shutdown what is queued gets `shutdownGrace` to go out. Lines that came by OTLP
/// are not forwarded: their sender exports them already.
final class OTLPForwarder: Service, Sendable {
    let settings: OTLPForwarding
    private let metrics: CollectorMetrics
    private let client: HTTPClient
    private let loop = WorkerLoop(interval: nil)
    private let logger = Logger(label: "collector.forwarder")

    /// Lines of one file waiting to go, with where they came from; they become OTLP records when a
    /// request is made of them, on the forwarder's turn, not on the indexer's.
    struct Unit {
        var bundle: BundleRecord
        var path: String
        var lines: ArraySlice<String>
        /// What the queue counts it as: its lines' bytes and a record's overhead each.
        var bytes: Int
        var records: Int { lines.count }
    }

    /// What a waiting record holds beside its line's text (its model's fields, ids, time).
    static let recordOverhead = 256

    private struct Queue {
        var units: [Unit] = []
        /// Records and bytes waiting or in flight, reserved as lines are offered.
        var records = 0
        var bytes = 0
        /// Records dropped since the last time that was said.
        var droppedUnsaid = 0
    }
    private let queue = Mutex(Queue())

    init(settings: OTLPForwarding, metrics: CollectorMetrics) {
        self.settings = settings
        self.metrics = metrics
        client = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup)
    }

    /// Lines of `path` in `bundle`, as the indexer read them. Never waits: what does not fit in the
    /// queue (records or bytes) is dropped and counted.
    func offer(bundle: BundleRecord, path: String, lines: [String]) {
        guard !lines.isEmpty, !bundle.blob.hasSuffix(".\(OTLPLogsFormat.blobExtension)") else { return }
        let sizes = lines.map { $0.utf8.count + Self.recordOverhead }
        let taken = queue.withLock { queue in
            let records = min(lines.count, max(0, settings.maxQueuedRecords - queue.records))
            let room = settings.maxQueuedBytes - queue.bytes
            var taken = 0
            var bytes = 0
            while taken < records, bytes + sizes[taken] <= room {
                bytes += sizes[taken]
                taken += 1
            }
            queue.records += taken
            queue.bytes += bytes
            queue.droppedUnsaid += lines.count - taken
            return taken
        }
        metrics.logsForwarded(lines.count - taken, outcome: "dropped_queue_full")
        guard taken > 0 else { return }
        let units = stride(from: 0, to: taken, by: settings.maxRecordsPerRequest).map { start in
            let end = min(taken, start + settings.maxRecordsPerRequest)
            return Unit(bundle: bundle, path: path, lines: lines[start..<end], bytes: sizes[start..<end].reduce(0, +))
        }
        queue.withLock { $0.units += units }
        loop.wake()
    }

    /// A unit's lines as OTLP records under their resource, which names the app as its bundle's
    /// manifest does and says where the lines came from.
    static func resourceLogs(of unit: Unit) -> Opentelemetry_Proto_Logs_V1_ResourceLogs {
        let bundle = unit.bundle
        var resource = Opentelemetry_Proto_Logs_V1_ResourceLogs()
        resource.resource.attributes = [OTLPKeyValue("service.name", bundle.appName ?? "unknown_service")]
        if let version = bundle.appVersion {
            resource.resource.attributes.append(OTLPKeyValue("service.version", version))
        }
        if let host = bundle.host { resource.resource.attributes.append(OTLPKeyValue("host.name", host)) }
        resource.resource.attributes += [
            OTLPKeyValue("blackbox.project.id", String(bundle.projectID)),
            OTLPKeyValue("blackbox.bundle.id", String(bundle.id)), OTLPKeyValue("log.file.path", unit.path),
        ]
        var scopes: [String: Int] = [:]
        for text in unit.lines {
            let (label, record) = OTLPLogLines.record(ofLine: text, fallbackTime: bundle.receivedAt)
            let name = label ?? ""
            if let index = scopes[name] {
                resource.scopeLogs[index].logRecords.append(record)
            } else {
                var scope = Opentelemetry_Proto_Logs_V1_ScopeLogs()
                scope.scope.name = name
                scope.logRecords = [record]
                scopes[name] = resource.scopeLogs.count
                resource.scopeLogs.append(scope)
            }
        }
        return resource
    }

    func run() async throws {
        await loop.run { await sendQueued() }
        // Shutdown: what is queued gets a last chance, bounded.
        let deadline = ContinuousClock.now + settings.shutdownGrace
        await sendQueued(until: deadline)
        let left = queue.withLock { queue in
            defer { queue = Queue() }
            return queue.records
        }
        if left > 0 {
            metrics.logsForwarded(left, outcome: "dropped_at_shutdown")
            logger.warning("stopping with \(left) log records not forwarded to \(settings.endpoint)")
        }
        try? await client.shutdown()
    }

    /// Sends until the queue is empty, the loop stops, or `deadline` passes.
    private func sendQueued(until deadline: ContinuousClock.Instant? = nil) async {
        var backoff = settings.initialBackoff
        while let units = nextUnits() {
            let records = units.reduce(0) { $0 + $1.records }
            var request = OTLPLogsRequest()
            request.resourceLogs = units.map(Self.resourceLogs)
            defer { release(units) }
            while true {
                let outcome = await send(request)
                switch outcome {
                case .sent(let rejected):
                    metrics.logsForwarded(records - rejected, outcome: "sent")
                    metrics.logsForwarded(rejected, outcome: "refused")
                case .refused(let status):
                    metrics.logsForwarded(records, outcome: "refused")
                    logger.warning("\(settings.endpoint) refused \(records) log records: HTTP \(status)")
                case .retry(let after, let reason):
                    metrics.logsForwarded(records, outcome: "retried")
                    let wait = after ?? backoff
                    backoff = min(backoff * 2, settings.maxBackoff)
                    let stopping = deadline.map { ContinuousClock.now + wait > $0 } ?? loop.isStopping
                    if stopping {
                        putBack(units)
                        return
                    }
                    logger.notice("forwarding \(records) log records: \(reason); again in \(wait)")
                    // In steps, so that shutdown does not wait out a long backoff.
                    let resume = ContinuousClock.now + wait
                    while ContinuousClock.now < resume, deadline != nil || !loop.isStopping {
                        try? await Task.sleep(for: min(.milliseconds(100), resume - ContinuousClock.now))
                    }
                    if deadline == nil, loop.isStopping {
                        putBack(units)
                        return
                    }
                    continue
                }
                backoff = settings.initialBackoff
                break
            }
            sayDropped()
            if let deadline, ContinuousClock.now > deadline { return }
            if deadline == nil, loop.isStopping { return }
        }
        sayDropped()
    }

    /// The oldest units, up to a request's worth of records, taken off the queue (still counted in
    /// its bounds until `release`).
    private func nextUnits() -> [Unit]? {
        queue.withLock { queue in
            guard !queue.units.isEmpty else { return nil }
            var records = 0
            var taken = 0
            for unit in queue.units {
                if records > 0, records + unit.records > settings.maxRecordsPerRequest { break }
                records += unit.records
                taken += 1
            }
            defer { queue.units.removeFirst(taken) }
            return Array(queue.units.prefix(taken))
        }
    }

    /// Units sent or given up on: their room in the queue is free again.
    private func release(_ units: [Unit]) {
        queue.withLock { queue in
            queue.records -= units.reduce(0) { $0 + $1.records }
            queue.bytes -= units.reduce(0) { $0 + $1.bytes }
        }
    }

    /// Units that could not go yet, back at the front of the queue (where they were), counted again.
    private func putBack(_ units: [Unit]) {
        queue.withLock { queue in
            queue.units.insert(contentsOf: units, at: 0)
            queue.records += units.reduce(0) { $0 + $1.records }
            queue.bytes += units.reduce(0) { $0 + $1.bytes }
        }
    }

    private func sayDropped() {
        let dropped = queue.withLock { queue in
            defer { queue.droppedUnsaid = 0 }
            return queue.droppedUnsaid
        }
        if dropped > 0 {
            logger.warning(
                "dropped \(dropped) log records: \(settings.maxQueuedRecords) were waiting for \(settings.endpoint) already"
            )
        }
    }

    enum Outcome {
        /// Taken; `rejected` records refused in its `partialSuccess`.
        case sent(rejected: Int)
        case refused(status: UInt)
        case retry(after: Duration?, reason: String)
    }

    private func send(_ logs: OTLPLogsRequest) async -> Outcome {
        var request = HTTPClientRequest(url: settings.endpoint.absoluteString)
        request.method = .POST
        for (name, value) in settings.headers { request.headers.add(name: name, value: value) }
        request.headers.replaceOrAdd(name: "Content-Type", value: OTLPEncoding.protobuf.contentType)
        request.headers.replaceOrAdd(name: "Content-Encoding", value: "gzip")
        request.headers.replaceOrAdd(name: "User-Agent", value: "blackbox-collector")
        do {
            let body = try GzipData.compress(Array(try logs.encoded(.protobuf)))
            request.body = .bytes(ByteBuffer(bytes: body))
            let response = try await client.execute(request, timeout: .init(settings.requestTimeout))
            let answer = try await response.body.collect(upTo: 1 << 20)
            switch response.status.code {
            case 200..<300:
                let decoded = try? OTLPLogsResponse(serializedBytes: Data(buffer: answer))
                return .sent(rejected: Int(decoded?.partialSuccess.rejectedLogRecords ?? 0))
            case 429, 502, 503, 504:
                let after = response.headers.first(name: "Retry-After").flatMap(Int.init).map { Duration.seconds($0) }
                return .retry(after: after, reason: "HTTP \(response.status.code)")
            default:
                return .refused(status: response.status.code)
            }
        } catch {
            return .retry(after: nil, reason: "\(error)")
        }
    }
}
