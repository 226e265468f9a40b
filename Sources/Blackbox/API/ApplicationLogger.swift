import Logging

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

extension Blackbox {
    /// The logger to give a server framework (`Application(router:logger:)` in Hummingbird), with
    /// the framework's level conventions honoured through Blackbox's levels instead of over them
    /// (`applyFrameworkLogLevel`). The logger itself has no level of its own (without a running
    /// Blackbox it gets the chosen one).
    ///
    /// Frameworks' templates set `logger.logLevel` (to `LOG_LEVEL`, a `--log-level` option, or
    /// `.info`); a level set on a logger pins it and every logger copied from it (each request's),
    /// silently overriding `LevelSettings` and `BLACKBOX_LOG_LEVEL`.
    public static func applicationLogger(
        label: String, logLevel: Logger.Level? = nil,
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) -> Logger {
        var logger = Logger(label: label)
        if let level = applyFrameworkLogLevel(logLevel, environment: environment), core == nil {
            logger.logLevel = level
        }
        return logger
    }

    /// Makes the most explicit of `commandLine` (a `--log` / `--log-level` option),
    /// `BLACKBOX_LOG_LEVEL` (applied at start already) and a valid `LOG_LEVEL` Blackbox's default
    /// level, keeping the per-label levels. Returns the level it chose, nil when the configured levels
    /// stay.
    @discardableResult
    public static func applyFrameworkLogLevel(
        _ commandLine: Logger.Level?, environment: [String: String] = ProcessInfo.processInfo.environment
    ) -> Logger.Level? {
        guard let level = frameworkLevel(commandLine: commandLine, environment: environment) else { return nil }
        if let core {
            var levels = core.levels
            levels.defaultLevel = LogLevel(level)
            core.levels = levels
        }
        return level
    }

    static func frameworkLevel(commandLine: Logger.Level?, environment: [String: String]) -> Logger.Level? {
        if let commandLine { return commandLine }
        // BLACKBOX_LOG_LEVEL was applied at start and is the more specific of the two.
        guard environment["BLACKBOX_LOG_LEVEL"] == nil else { return nil }
        return environment["LOG_LEVEL"].flatMap { Logger.Level(rawValue: $0.lowercased()) }
    }
}
