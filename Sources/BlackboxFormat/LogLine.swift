import Foundation

/// A line of a Blackbox log file in text format, `2026-11-21T22:39:39.123Z INFO  net: message
/// key=value`, in its parts. Read back from files (breadcrumbs, Sentry structured logs, the report
/// page) and written by the collector for lines that came in another form (Sentry's `log` items), so
/// the log indexer and log search treat them like an app's file. The library's writer
/// (`LineFormatter`, on the hot path) writes the same form from journal records; a test holds the two
/// together.
public struct LogLine: Sendable, Equatable {
    public var time: Date
    /// Blackbox's level tag, lowercased: `trace`, `debug`, `info`, `note`, `warn`, `error`, `crit`
    /// (and the long names `notice`, `warning`, `critical` a line may carry).
    public var level: String
    public var label: String?
    /// The rest of the line: the message and its `key=value` metadata.
    public var message: String

    public init(time: Date, level: String, label: String?, message: String) {
        self.time = time
        self.level = level
        self.label = label
        self.message = message
    }

    /// Nil for a line of another shape (JSON Lines, a line cut short).
    public init?(parsing line: String) {
        let parts = line.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: true)
        guard parts.count == 3, let time = ReportTime.parse(String(parts[0])) else { return nil }
        let level = parts[1].lowercased()
        guard Self.levels.contains(level) else { return nil }
        var rest = parts[2].drop { $0 == " " }
        var label: String?
        if let colon = rest.firstIndex(of: ":"), !rest[..<colon].contains(" ") {
            label = String(rest[..<colon])
            rest = rest[rest.index(after: colon)...].drop { $0 == " " }
        }
        self.init(time: time, level: level, label: label, message: String(rest))
    }

    /// The line as the writer writes it: milliseconds UTC, the tag padded to five, `label: message`.
    /// Line breaks in the parts become spaces (one record is one line).
    public var text: String {
        let tag = level.uppercased()
        let padded = tag.count < 5 ? tag + String(repeating: " ", count: 5 - tag.count) : tag
        let prefix = label.map { "\(Self.oneLine($0)): " } ?? ""
        return "\(ReportTime.format(time)) \(padded) \(prefix)\(Self.oneLine(message))"
    }

    static let levels: Set = [
        "trace", "debug", "info", "note", "notice", "warn", "warning", "error", "crit", "critical",
    ]

    private static func oneLine(_ text: String) -> String {
        // Most lines are ASCII without a line break: told by their bytes, not by walking Characters
        // (which took a fifth of the collector's time rendering OTLP records as lines).
        let mayBreak = text.utf8.contains { $0 >= 0x80 || (0x0A...0x0D).contains($0) }
        guard mayBreak, text.contains(where: \.isNewline) else { return text }
        return String(text.map { $0.isNewline ? " " : $0 })
    }
}
