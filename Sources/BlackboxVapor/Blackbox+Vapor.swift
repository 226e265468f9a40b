#if Vapor
    public import Blackbox
    public import Vapor

    extension Blackbox {
        /// Starts Blackbox in a Vapor app, in place of the template's
        /// `LoggingSystem.bootstrap(from: &env)` (swift-log traps on a second bootstrap): Blackbox
        /// becomes the logging backend, and Vapor's `--log` option (taken off the command line, as
        /// Vapor's own bootstrap does) or `LOG_LEVEL` sets Blackbox's default level, keeping the
        /// per-label levels (`Blackbox.applyFrameworkLogLevel`). With neither, the configured levels
        /// stay (Vapor's own default would be `info`, or `notice` in production).
        @discardableResult
        public static func start(_ configuration: BlackboxConfiguration, from environment: inout Environment) throws
            -> BlackboxRuntime
        {
            let commandLine = try LogOption(from: &environment.commandInput).level
            let runtime = try Blackbox.start(configuration)
            applyFrameworkLogLevel(commandLine)
            return runtime
        }

        /// Vapor's `--log` option, parsed the way `Logger.Level.detect(from:)` does.
        private struct LogOption: CommandSignature {
            @Option(name: "log", help: "Change log level")
            var level: Logger.Level?
            init() {}
        }
    }
#endif
