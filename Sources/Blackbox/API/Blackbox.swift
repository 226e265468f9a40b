import Logging
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// The process-wide entry point.
///
/// ```swift
/// try Blackbox.start(BlackboxConfiguration(appName: "shop"))
/// let logger = Logger(label: "checkout")      // swift-log, now backed by Blackbox
/// let fast = Blackbox.fastLogger("hot-path")  // the native API
/// ```
public enum Blackbox {
    private static let current = Mutex<LoggingCore?>(nil)
    private static let bootstrapped = Atomic<Bool>(false)

    /// Starts logging: opens the journal in the configuration's directory, replays what a previous
    /// run left in it, starts the writer, and (once per process, as swift-log allows) bootstraps
    /// `LoggingSystem` with `BlackboxLogHandler`. Lines are drained at normal process exit.
    ///
    /// swift-log traps on a second bootstrap and cannot be asked whether it was bootstrapped: if the
    /// app bootstraps swift-log itself, pass `bootstrapLogging: false` and use
    /// `BlackboxLogHandler(label:core:)` in its own factory (e.g. inside a `MultiplexLogHandler`).
    @discardableResult
    public static func start(_ configuration: BlackboxConfiguration, bootstrapLogging: Bool = true)
        throws(BlackboxError) -> LoggingCore
    {
        let core: LoggingCore = try current.withLock { (current) throws(BlackboxError) -> LoggingCore in
            if current != nil { throw BlackboxError.alreadyStarted }
            let core = try LoggingCore(configuration: configuration)
            current = core
            return core
        }
        if bootstrapLogging, bootstrapped.compareExchange(expected: false, desired: true, ordering: .relaxed).exchanged
        {
            LoggingSystem.bootstrap { label in
                guard let core = Blackbox.core else { return StreamLogHandler.standardError(label: label) }
                return BlackboxLogHandler(label: label, core: core)
            }
            atexit { Blackbox.core?.shutdown(timeout: .seconds(2)) }
        }
        return core
    }

    /// The running core, if `start` was called.
    public static var core: LoggingCore? { current.withLock { $0 } }

    public static func fastLogger(_ label: String) -> FastLogger? {
        core.map { FastLogger(label: label, core: $0) }
    }

    /// Blocks until everything logged so far is written, at most `timeout`.
    @discardableResult
    public static func flush(timeout: Duration = .seconds(5)) -> Bool { core?.flush(timeout: timeout) ?? true }

    public static func flush() async { await core?.flush() }

    /// Drains and stops; `start` may be called again afterwards.
    public static func shutdown() {
        let core = current.withLock { current in
            defer { current = nil }
            return current
        }
        core?.shutdown()
    }

    /// The last `count` lines logged (crash and non-fatal reports embed them).
    public static func recentLines(_ count: Int = 50) -> [String] { core?.recentLines(count) ?? [] }

    /// Changes levels at run time; existing loggers follow.
    public static func setLevels(_ levels: LevelSettings) { core?.levels = levels }
}
