import BlackboxFormat
import Foundation

/// One Sentry structured log record (a `log` item is `{"items": [records]}`,
/// develop.sentry.dev/sdk/telemetry/logs/), written once for both directions: an app's archived
/// lines go out as records (`init(line:release:environment:)`), an SDK's records come in as
/// Blackbox log lines (`logLine`), so the collector's indexer and search treat them like an app's
/// log file.
public struct SentryLogRecord: Codable, Sendable, Equatable {
    /// Seconds since 1970, with fractions.
    public var timestamp: Double?
    public var level: String?
    public var body: String
    public var traceID: String?
    public var attributes: [String: Attribute]?

    enum CodingKeys: String, CodingKey {
        case timestamp, level, body
        case traceID = "trace_id"
        case attributes
    }

    /// `{"value": …, "type": "string"}`; older SDKs sent bare values, read as such.
    public struct Attribute: Codable, Sendable, Equatable {
        public var value: SentryJSON
        public var type: String?

        public init(_ text: String) {
            self.init(value: .string(text), type: "string")
        }

        public init(value: SentryJSON, type: String?) {
            self.value = value
            self.type = type
        }
    }

    /// A `log` item's payload.
    public struct Payload: Codable, Sendable, Equatable {
        public var items: [SentryLogRecord]

        public init(items: [SentryLogRecord]) { self.items = items }

        /// At most `limit` records; a record that is not an object with a `body` is no log line and
        /// is skipped.
        public init(lenient json: SentryJSON, limit: Int) {
            items = (json["items"]?.values ?? []).lazy.compactMap(SentryLogRecord.init(lenient:)).prefix(max(limit, 0))
                .map { $0 }
        }
    }

    /// A Blackbox log line (`LogLine`) as a record; nil for a line of another shape.
    public init?(line: String, release: String?, environment: String?) {
        guard let parts = LogLine(parsing: line) else { return nil }
        var attributes = ["sentry.origin": Attribute("auto.log.blackbox")]
        if let label = parts.label { attributes["logger.name"] = Attribute(label) }
        if let release { attributes["sentry.release"] = Attribute(release) }
        if let environment { attributes["sentry.environment"] = Attribute(environment) }
        timestamp = parts.time.timeIntervalSince1970
        level = SentryLogLevel(blackboxTag: parts.level).rawValue
        body = parts.message
        self.attributes = attributes
    }

    public init?(lenient json: SentryJSON) {
        guard json.object != nil, let body = json["body"] else { return nil }
        timestamp = json["timestamp"]?.secondsSince1970
        level = json["level"]?.string
        self.body = body.text
        traceID = json["trace_id"]?.string
        attributes = json["attributes"]?.object?.mapValues { attribute in
            Attribute(value: attribute["value"] ?? attribute, type: attribute["type"]?.string)
        }
    }

    /// Attributes a line shows after its body (the `sentry.*` ones and the logger's name are not).
    public static let maxAttributesShown = 32

    /// The record as a line of Blackbox's log format:
    /// `2026-11-26T06:47:10.542Z INFO  logger.name: body trace_id=… key=value`. The label is the
    /// logger's name, else the app as the SDK names it (its release, `shop@1.4.2+77`), as Blackbox's
    /// own lines carry the app's logger label.
    public var logLine: String {
        let attributes = self.attributes ?? [:]
        let logger =
            attributes["logger.name"]?.value.text ?? attributes["sentry.release"]?.value.text
            ?? attributes["sentry.origin"]?.value.text ?? "sentry"
        var message = body
        if let traceID { message += " trace_id=\(traceID)" }
        for (key, attribute) in attributes.sorted(by: { $0.key < $1.key }).prefix(Self.maxAttributesShown)
        where !key.hasPrefix("sentry.") && key != "logger.name" {
            message += " \(key)=\(attribute.value.text)"
        }
        return LogLine(
            time: Date(timeIntervalSince1970: timestamp ?? 0), level: SentryLogLevel(sentryName: level).blackboxTag,
            label: logger, message: message
        ).text
    }
}
