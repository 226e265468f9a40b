/// Sentry's log levels (develop.sentry.dev/sdk/telemetry/logs/) and Blackbox's level tags, both ways:
/// an app's archived lines go out as Sentry records, an SDK's records come in as lines.
public enum SentryLogLevel: String, Sendable, CaseIterable {
    case trace, debug, info, warn, error, fatal

    /// From a Blackbox tag (`LogLine.level`); `note` and unknown tags are `info`.
    public init(blackboxTag tag: String) {
        switch tag.lowercased() {
        case "trace": self = .trace
        case "debug": self = .debug
        case "warn", "warning": self = .warn
        case "error": self = .error
        case "crit", "critical": self = .fatal
        default: self = .info
        }
    }

    /// From a record's `level` as SDKs write it (`warning` too); a missing or unknown one is `info`.
    public init(sentryName name: String?) {
        self =
            name.flatMap { SentryLogLevel(rawValue: $0.lowercased()) }
            ?? (name?.lowercased() == "warning" ? .warn : .info)
    }

    /// Blackbox's tag for it, lowercased as `LogLine.level` holds it.
    public var blackboxTag: String {
        switch self {
        case .trace: "trace"
        case .debug: "debug"
        case .info: "info"
        case .warn: "warn"
        case .error: "error"
        case .fatal: "crit"
        }
    }
}
