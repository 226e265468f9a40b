import BlackboxFormat
import BlackboxSentry
import Foundation

/// Sentry structured logs (`log` items: `{"items": [{timestamp, level, body, trace_id, attributes}]}`)
/// as text lines in Blackbox's log format (`LogLine`), so the log indexer and log search treat them
/// like an app's log file: `2026-11-26T06:47:10.542Z INFO  logger.name: body trace_id=… key=value`.
enum SentryLogs {
    /// Records one envelope may carry in all its `log` items (sentry-python sends at most 100 an item);
    /// records past it are dropped (security review 2026-11-27, finding 2: 999 items of 10,000
    /// records each were 10 M lines from 161 KB).
    static let maxRecordsPerEnvelope = 10_000
    /// A `log` item's bytes: a larger one is dropped unread (its JSON would be decoded whole).
    static let maxItemBytes = 1 << 20
    static let maxAttributes = 32

    /// The item's records as lines, at most `limit` of them; a record that is not an object with a
    /// `body` is no log line and is skipped.
    static func lines(_ payload: SentryJSON, limit: Int = maxRecordsPerEnvelope) -> [String] {
        (payload["items"]?.values ?? []).lazy.filter { $0.object != nil && $0["body"] != nil }.prefix(max(limit, 0))
            .map(line)
    }

    static func line(_ record: SentryJSON) -> String {
        let time = record["timestamp"]?.date ?? Date(timeIntervalSince1970: 0)
        let level = SentryLogLevel(sentryName: record["level"]?.string).blackboxTag
        let attributes = record["attributes"]?.object ?? [:]
        // Attribute values are `{"value": …, "type": "string"}`; older SDKs sent bare values.
        func value(_ attribute: SentryJSON) -> String { (attribute["value"] ?? attribute).text }
        // The line's label: the logger's name, else the app as the SDK names it (its release,
        // `shop@1.4.2+77`), as Blackbox's own lines carry the app's logger label.
        let logger =
            attributes["logger.name"].map(value) ?? attributes["sentry.release"].map(value)
            ?? attributes["sentry.origin"].map(value) ?? "sentry"
        var message = record["body"]?.text ?? ""
        if let trace = record["trace_id"]?.string { message += " trace_id=\(trace)" }
        for (key, attribute) in attributes.sorted(by: { $0.key < $1.key }).prefix(maxAttributes)
        where !key.hasPrefix("sentry.") && key != "logger.name" {
            message += " \(key)=\(value(attribute))"
        }
        return LogLine(time: time, level: level, label: logger, message: message).text
    }
}
