import Foundation

/// Where the collector forwards the log lines it ingests, over OTLP/HTTP (`OTLPForwarder`):
/// `--forward-logs URL` / `BLACKBOX_COLLECTOR_FORWARD_LOGS_URL`, with headers from
/// `--forward-logs-header name=value` / `BLACKBOX_COLLECTOR_FORWARD_LOGS_HEADERS` (OpenTelemetry's
/// `name=value,name=value` form, values percent-decoded as `OTEL_EXPORTER_OTLP_HEADERS` are).
public struct OTLPForwarding: Sendable {
    /// The full URL requests go to, e.g. `http://loki:3100/otlp/v1/logs`.
    public var endpoint: URL
    public var headers: [(name: String, value: String)]
    /// Records waiting in memory at most; lines beyond are dropped and counted. Default 100,000.
    public var maxQueuedRecords = 100_000
    /// Bytes of lines waiting in memory at most (each record counted with 256 bytes of its own);
    /// lines beyond are dropped and counted. Default 64 MiB.
    public var maxQueuedBytes = 64 << 20
    /// Records in one request at most. Default 1,000.
    public var maxRecordsPerRequest = 1_000
    /// One request's time limit. Default 10 s.
    public var requestTimeout: Duration = .seconds(10)
    /// The first wait before a request is sent again (it doubles up to `maxBackoff`). Default 1 s.
    public var initialBackoff: Duration = .seconds(1)
    public var maxBackoff: Duration = .seconds(60)
    /// What is queued at shutdown gets this long to go out. Default 5 s.
    public var shutdownGrace: Duration = .seconds(5)

    public struct Invalid: Error, CustomStringConvertible {
        public let description: String
    }

    public init(endpoint: String, headers: [(name: String, value: String)] = []) throws(Invalid) {
        guard let url = URL(string: endpoint), ["http", "https"].contains(url.scheme?.lowercased() ?? ""),
            url.host?.isEmpty == false
        else { throw Invalid(description: "the logs' forwarding URL must be http:// or https://, got \"\(endpoint)\"") }
        self.endpoint = url
        self.headers = headers
    }

    /// `name=value,name=value`, as OpenTelemetry's `OTEL_EXPORTER_OTLP_HEADERS` writes them.
    public static func headers(_ text: String) throws(Invalid) -> [(name: String, value: String)] {
        var headers: [(name: String, value: String)] = []
        for pair in text.split(separator: ",") where !pair.trimmingCharacters(in: .whitespaces).isEmpty {
            let parts = pair.split(separator: "=", maxSplits: 1)
            let name = parts.first.map { $0.trimmingCharacters(in: .whitespaces) } ?? ""
            guard parts.count == 2, !name.isEmpty,
                name.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" })
            else { throw Invalid(description: "a forwarding header is name=value, got \"\(pair)\"") }
            let value = parts[1].trimmingCharacters(in: .whitespaces)
            headers.append((name, value.removingPercentEncoding ?? value))
        }
        return headers
    }
}
