import Logging

/// swift-log's levels as a one-byte ordinal, the form they take in the journal and the level tables.
public enum LogLevel: UInt8, Sendable, Comparable, CaseIterable {
    case trace = 0
    case debug, info, notice, warning, error, critical
    /// Above every level: nothing is logged.
    case off = 7

    public static func < (lhs: LogLevel, rhs: LogLevel) -> Bool { lhs.rawValue < rhs.rawValue }

    public init(_ level: Logger.Level) {
        switch level {
        case .trace: self = .trace
        case .debug: self = .debug
        case .info: self = .info
        case .notice: self = .notice
        case .warning: self = .warning
        case .error: self = .error
        case .critical: self = .critical
        }
    }

    /// Bytes read back from a journal written by another process may hold anything.
    init(clamping raw: UInt8) { self = LogLevel(rawValue: min(raw, 7)) ?? .off }

    public var loggerLevel: Logger.Level {
        switch self {
        case .trace: .trace
        case .debug: .debug
        case .info: .info
        case .notice: .notice
        case .warning: .warning
        case .error: .error
        case .critical, .off: .critical
        }
    }

    /// The lower-case name used in configuration and JSON output.
    public var name: String {
        switch self {
        case .trace: "trace"
        case .debug: "debug"
        case .info: "info"
        case .notice: "notice"
        case .warning: "warning"
        case .error: "error"
        case .critical: "critical"
        case .off: "off"
        }
    }

    public init?(name: some StringProtocol) {
        guard let level = LogLevel.allCases.first(where: { $0.name == name.lowercased() }) else { return nil }
        self = level
    }
}
