import Logging

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

extension Blackbox {
    /// The logger to give a server framework (`Application(router:logger:)` in Hummingbird), with
    /// the framework's level conventions honoured through Blackbox's levels instead of over them.
    ///
    /// Frameworks' templates set `logger.logLevel` (to `LOG_LEVEL`, a `--log-level` option, or
    /// `.info`); a level set on a logger pins it and every logger copied from it (each request's),
    /// silently overriding `LevelSettings` and `BLACKBOX_LOG_LEVEL`. Here the most explicit of
    /// `logLevel` (a command-line option), `BLACKBOX_LOG_LEVEL` (already applied at start) and a valid
    /// `LOG_LEVEL` sets Blackbox's default level, keeping the per-label levels. The logger itself has
    /// no level of its own (without a running Blackbox it gets the chosen one).
    public static func applicationLogger(
        label: String, logLevel: Logger.Level? = nil,
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) -> Logger {
        var logger = Logger(label: label)
        guard let level = applicationLevel(logLevel: logLevel, environment: environment) else { return logger }
        if let core {
            var levels = core.levels
            levels.defaultLevel = LogLevel(level)
            core.levels = levels
        } else {
            logger.logLevel = level
        }
        return logger
    }

    /// The level `applicationLogger` sets, nil to keep the configured levels.
    static func applicationLevel(logLevel: Logger.Level?, environment: [String: String]) -> Logger.Level? {
        if let logLevel { return logLevel }
        // BLACKBOX_LOG_LEVEL was applied at start and is the more specific of the two.
        guard environment["BLACKBOX_LOG_LEVEL"] == nil else { return nil }
        return environment["LOG_LEVEL"].flatMap { Logger.Level(rawValue: $0.lowercased()) }
    }
}
