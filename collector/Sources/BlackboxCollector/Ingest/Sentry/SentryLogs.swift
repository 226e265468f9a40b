import BlackboxFormat
import BlackboxSentry
import Foundation

/// Sentry structured logs (`log` items of `SentryLogRecord`s) as text lines in Blackbox's log format
/// (`SentryLogRecord.logLine`), so the log indexer and log search treat them like an app's log file.
enum SentryLogs {
    /// Records one envelope may carry in all its `log` items (sentry-python sends at most 100 an item);
    /// records past it are dropped (security review 2026-11-27, finding 2: 999 items of 10,000
    /// records each were 10 M lines from 161 KB).
    static let maxRecordsPerEnvelope = 10_000
    /// A `log` item's bytes: a larger one is dropped unread (its JSON would be decoded whole).
    static let maxItemBytes = 1 << 20

    /// The item's records as lines, at most `limit` of them.
    static func lines(_ payload: SentryJSON, limit: Int = maxRecordsPerEnvelope) -> [String] {
        SentryLogRecord.Payload(lenient: payload, limit: limit).items.map(\.logLine)
    }
}
