import Prometheus
import Synchronization

/// Prometheus metrics at `/metrics`: uploads accepted and refused (by reason), bytes received, ingest
/// latency.
final class CollectorMetrics: Sendable {
    let registry = PrometheusCollectorRegistry()
    private let acceptedCounter: Counter
    private let duplicateCounter: Counter
    private let bytesCounter: Counter
    private let latency: DurationHistogram

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
    }

    func accepted(bytes: Int, duplicate: Bool, latency duration: Duration) {
        (duplicate ? duplicateCounter : acceptedCounter).increment()
        bytesCounter.increment(by: Int64(bytes))
        latency.record(duration)
    }

    func rejected(reason: String) {
        registry.makeCounter(descriptor: Self.rejected, labels: [("reason", reason)]).increment()
    }

    func render() -> String {
        var buffer: [UInt8] = []
        registry.emit(into: &buffer)
        return String(decoding: buffer, as: UTF8.self)
    }
}
