import BlackboxFormat

#if canImport(Glibc)
    import Glibc
#endif

extension LoggingCore {
    /// What a core will open, decided from the configuration and the environment alone, touching no
    /// file: the levels after `BLACKBOX_LOG_LEVEL`, the outputs with their formats and colours, and
    /// the names of each instance's journal and log file. `LoggingCore.init(plan:)` does the opening
    /// (the `IngestPlan` habit: decide as a value, then act).
    struct Plan {
        /// What the plan reads from the process, passed in so that a test can choose it.
        struct Environment {
            /// `BLACKBOX_LOG_LEVEL`, when set and not empty.
            var logLevel: String?
            /// `NO_COLOR` is set (https://no-color.org).
            var noColor: Bool
            var standardErrorIsTerminal: Bool
            /// `BLACKBOX_CONSOLE_FORMAT`, when set and not empty: the console stream's format.
            var consoleFormat: String? = nil

            static var current: Environment {
                Environment(
                    logLevel: variable("BLACKBOX_LOG_LEVEL"), noColor: getenv("NO_COLOR") != nil,
                    standardErrorIsTerminal: isatty(2) == 1, consoleFormat: variable("BLACKBOX_CONSOLE_FORMAT"))
            }

            private static func variable(_ name: String) -> String? {
                getenv(name).map { String(cString: $0) }.flatMap { $0.isEmpty ? nil : $0 }
            }
        }

        /// The configuration as the core runs it (its levels with `BLACKBOX_LOG_LEVEL` applied).
        let configuration: BlackboxConfiguration
        /// Why `BLACKBOX_LOG_LEVEL` or `BLACKBOX_CONSOLE_FORMAT` was ignored: a bad variable in the
        /// environment must not take the app down, so the core starts with the configuration's values
        /// and logs this as its first line.
        let environmentProblem: String?
        let layout: DiagnosticsDirectory
        /// Every output, in the order the writer serves them; the file's first when there is a file.
        /// A `var`, so that a test can add a destination of its own.
        var outputs: [LogOutput.Spec]

        init(_ configuration: BlackboxConfiguration, environment: Environment) throws(BlackboxError) {
            var configuration = configuration
            var problems: [String] = []
            if let logLevel = environment.logLevel {
                do {
                    configuration.levels = try LevelSettings(parsing: logLevel, base: configuration.levels)
                } catch {
                    problems.append("\(error.description); ignored, the configured levels apply")
                }
            }
            if let name = environment.consoleFormat {
                if let format = LogFormat(name: name) {
                    configuration.console.format = format
                } else {
                    problems.append(
                        "BLACKBOX_CONSOLE_FORMAT=\(name) is not text, json, ecs or logfmt; ignored, the configured format applies"
                    )
                }
            }
            let environmentProblem = problems.isEmpty ? nil : problems.joined(separator: "; ")
            guard !configuration.baseFileName.isEmpty, !configuration.baseFileName.contains("/") else {
                throw .invalidConfiguration(
                    "baseFileName must be a plain file name, got \"\(configuration.baseFileName)\"")
            }
            guard configuration.rotation.maxFileSize >= 4096 else {
                throw .invalidConfiguration("rotation.maxFileSize must be at least 4096 bytes")
            }
            self.configuration = configuration
            self.environmentProblem = environmentProblem
            self.layout = DiagnosticsDirectory(configuration.directory)
            self.outputs = Self.outputs(configuration, environment)
        }

        private static func outputs(_ configuration: BlackboxConfiguration, _ environment: Environment)
            -> [LogOutput.Spec]
        {
            let colored =
                switch configuration.console.color {
                case .always: true
                case .never: false
                case .auto: environment.standardErrorIsTerminal && !environment.noColor
                }
            var outputs: [LogOutput.Spec] = []
            let sinks = configuration.sinks
            if sinks.contains(.file) { outputs.append(.init(destination: .file, format: configuration.format)) }
            let consoleFormat = configuration.console.format
            if sinks.contains(.console) {
                let format = consoleFormat ?? .text
                outputs.append(.init(destination: .stream(2), format: format, colored: colored && format == .text))
            }
            if sinks.contains(.standardOutput) {
                outputs.append(.init(destination: .stream(1), format: consoleFormat ?? .jsonLines))
            }
            if sinks.contains(.journald) {
                var journald = configuration.journald
                journald.identifier = journald.identifier ?? configuration.appName
                outputs.append(.init(destination: .journald(journald), format: .text))
            }
            return outputs
        }

        var writesFile: Bool { outputs.contains { $0.destination == .file } }

        /// How many journals the core may try before giving up: several processes of one app on one
        /// directory (workers, a systemd template) each take the first one no live process holds.
        var instanceLimit: Int { max(1, configuration.maxInstances) }

        func journalPath(instance: Int) -> String { layout.journal(instance: instance) }

        /// The log file's base name: the configuration's, with `.<instance>` after the first instance.
        func logBaseName(instance: Int) -> String {
            BlackboxInstances.logBaseName(configuration.baseFileName, instance: instance)
        }

        var writerSettings: LogWriter.Settings {
            LogWriter.Settings(outputs: outputs, rotation: configuration.rotation, clock: configuration.clock)
        }
    }
}
