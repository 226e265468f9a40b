import Prometheus
import Synchronization

/// Prometheus metrics at `/metrics`: uploads accepted and refused (by reason), bytes received, ingest
/// latency; symbolication on the collector (reports done, failures, queue, whether a symbolizer is
/// installed).
final class CollectorMetrics: Sendable {
    let registry = PrometheusCollectorRegistry()
    private let acceptedCounter: Counter
    private let duplicateCounter: Counter
    private let bytesCounter: Counter
    private let latency: DurationHistogram
    private let symbolicatedCounter: Counter
    private let symbolicationFailures: Counter
    private let symbolicationDuration: DurationHistogram
    private let symbolicationQueue: Gauge
    private let symbolizerGauge: Gauge
    private let uploadsGauge: Gauge

    private static var accepted: MetricNameDescriptor {
        MetricNameDescriptor(
            namespace: "blackbox", metricName: "uploads_accepted", unitName: "total", helpText: "Bundles acknowledged")
    }
    private static var rejected: MetricNameDescriptor {
        MetricNameDescriptor(
            namespace: "blackbox", metricName: "uploads_rejected", unitName: "total",
            helpText: "Uploads refused, by reason")
    }

    init() {
        acceptedCounter = registry.makeCounter(descriptor: Self.accepted, labels: [("result", "stored")])
        duplicateCounter = registry.makeCounter(descriptor: Self.accepted, labels: [("result", "duplicate")])
        bytesCounter = registry.makeCounter(
            descriptor: .init(
                namespace: "blackbox", metricName: "upload_bytes", unitName: "total",
                helpText: "Bytes of accepted uploads"))
        latency = registry.makeDurationHistogram(
            descriptor: .init(
                namespace: "blackbox", metricName: "ingest_duration", unitName: "seconds",
                helpText: "Time from request to acknowledgement"),
            buckets: [
                .milliseconds(1), .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50),
                .milliseconds(100), .milliseconds(250), .seconds(1), .seconds(5),
            ])
        symbolicatedCounter = registry.makeCounter(
            descriptor: .init(
                namespace: "blackbox", metricName: "reports_symbolicated", unitName: "total",
                helpText: "Reports symbolicated on the collector from the symbol store"))
        symbolicationFailures = registry.makeCounter(
            descriptor: .init(
                namespace: "blackbox", metricName: "symbolizer_failures", unitName: "total",
                helpText: "llvm-symbolizer runs that failed or timed out (the report stays queued)"))
        symbolicationDuration = registry.makeDurationHistogram(
            descriptor: .init(
                namespace: "blackbox", metricName: "symbolication_duration", unitName: "seconds",
                helpText: "Time to symbolicate and regroup one report"),
            buckets: [
                .milliseconds(5), .milliseconds(25), .milliseconds(100), .milliseconds(500), .seconds(2), .seconds(10),
            ])
        symbolicationQueue = registry.makeGauge(
            descriptor: .init(
                namespace: "blackbox", metricName: "symbolication_pending", unitName: "reports",
                helpText: "Reports waiting to be symbolicated"))
        symbolizerGauge = registry.makeGauge(
            descriptor: .init(
                namespace: "blackbox", metricName: "symbolizer_available", unitName: "bool",
                helpText: "1 when llvm-symbolizer is installed, else 0 (reports are not symbolicated here)"))
        uploadsGauge = registry.makeGauge(
            descriptor: .init(
                namespace: "blackbox", metricName: "uploads_in_progress", unitName: "uploads",
                helpText: "Uploads admitted and not yet answered (bounded by maxConcurrentUploads)"))
    }

    func uploadsInProgress(_ count: Int) { uploadsGauge.set(to: Double(count)) }

    func symbolicated(duration: Duration) {
        symbolicatedCounter.increment()
        symbolicationDuration.record(duration)
    }

    func symbolicationFailed() { symbolicationFailures.increment() }

    func symbolicationPending(_ count: Int) { symbolicationQueue.set(to: Double(count)) }

    func symbolizerAvailable(_ available: Bool) { symbolizerGauge.set(to: available ? 1.0 : 0.0) }

    func accepted(bytes: Int, duplicate: Bool, latency duration: Duration) {
        (duplicate ? duplicateCounter : acceptedCounter).increment()
        bytesCounter.increment(by: Int64(bytes))
        latency.record(duration)
    }

    /// Items accepted and dropped (types Blackbox has no use for), by type. Only a Sentry envelope
    /// holds such items, hence the metric's name (kept: dashboards know it).
    func droppedItems(_ counts: [String: Int]) {
        for (type, count) in counts {
            registry.makeCounter(
                descriptor: .init(
                    namespace: "blackbox", metricName: "sentry_items_dropped", unitName: "total",
                    helpText: "Sentry envelope items accepted and dropped, by type"),
                labels: [("type", type)]
            ).increment(by: Int64(count))
        }
    }

    func rejected(reason: String) {
        registry.makeCounter(descriptor: Self.rejected, labels: [("reason", reason)]).increment()
    }

    private static var symbolUploadsRejected: MetricNameDescriptor {
        MetricNameDescriptor(
            namespace: "blackbox", metricName: "symbol_uploads_rejected", unitName: "total",
            helpText: "Symbol file uploads refused, by reason (quota_exceeded, too_many_uploads, ...)")
    }

    func symbolUploadRejected(reason: String) {
        registry.makeCounter(descriptor: Self.symbolUploadsRejected, labels: [("reason", reason)]).increment()
    }

    private static var leftOutFiles: MetricNameDescriptor {
        MetricNameDescriptor(
            namespace: "blackbox", metricName: "symbol_files_left_out", unitName: "total",
            helpText: "Debug files left out of symbolication after failing the symbolizer 3 times")
    }

    /// Log records the OTLP forwarder handled, by `outcome` (`sent`, `refused`, `retried`,
    /// `dropped_queue_full`, `dropped_at_shutdown`).
    func logsForwarded(_ count: Int, outcome: String) {
        guard count > 0 else { return }
        registry.makeCounter(descriptor: Self.forwarded, labels: [("outcome", outcome)]).increment(by: Int64(count))
    }
    private static var forwarded: MetricNameDescriptor {
        MetricNameDescriptor(
            namespace: "blackbox", metricName: "logs_forwarded", unitName: "total",
            helpText: "Log records the OTLP forwarder handled, by outcome")
    }

    func symbolFileLeftOut() { registry.makeCounter(descriptor: Self.leftOutFiles).increment() }

    func render() -> String {
        var buffer: [UInt8] = []
        registry.emit(into: &buffer)
        return String(decoding: buffer, as: UTF8.self)
    }
}
