#if Tools
    import ArgumentParser
    import BlackboxUpload
    import Foundation

    /// Where the collector is and which key to use: flags, then `BLACKBOX_SERVER` / `BLACKBOX_KEY`,
    /// then a config file (`--config`, `$BLACKBOX_CONFIG`, or `$XDG_CONFIG_HOME/blackbox/config.json`,
    /// default `~/.config/blackbox/config.json`) holding `{"server": "https://…", "key": "…"}`.
    struct CollectorOptions: ParsableArguments {
        @Option(help: "The collector's base URL, e.g. https://collector.example.com.") var server: String?
        @Option(help: "The project's ingest key.") var key: String?
        @Option(help: "A config file with server and key.") var config: String?

        struct Resolved {
            var server: String?
            var key: String?
            /// Where each value came from, for `doctor`.
            var serverSource = "not set"
            var keySource = "not set"
            var configFile: String?
            var symbolsToken: String?
        }

        struct ConfigFile: Decodable {
            var server: String?
            var key: String?
            /// A symbols key, for `blackbox symbols upload` (build machines).
            var symbolsToken: String?
        }

        func resolve() throws -> Resolved { try Self.resolve(server: server, key: key, config: config) }

        /// The resolution with the flags' values given (also for `blackbox symbols upload`).
        static func resolve(server: String?, key: String?, config: String?) throws -> Resolved {
            let environment = ProcessInfo.processInfo.environment
            var resolved = Resolved()
            let explicitFile = config ?? environment["BLACKBOX_CONFIG"]
            let file = explicitFile ?? defaultConfigPath(environment)
            if FileManager.default.fileExists(atPath: file) {
                let data: Data
                do {
                    data = try Data(contentsOf: URL(fileURLWithPath: file))
                } catch {
                    throw InputProblem(description: "\(file): cannot read (\(error.localizedDescription))")
                }
                let parsed: ConfigFile
                do {
                    parsed = try JSONDecoder().decode(ConfigFile.self, from: data)
                } catch {
                    throw InputProblem(description: "\(file): not a JSON object with \"server\" and \"key\" strings")
                }
                resolved.configFile = file
                if let value = parsed.server { (resolved.server, resolved.serverSource) = (value, file) }
                if let value = parsed.key { (resolved.key, resolved.keySource) = (value, file) }
                resolved.symbolsToken = parsed.symbolsToken
            } else if let explicitFile {
                throw InputProblem(description: "\(explicitFile): no such config file")
            }
            if let value = environment["BLACKBOX_SERVER"], !value.isEmpty {
                (resolved.server, resolved.serverSource) = (value, "BLACKBOX_SERVER")
            }
            if let value = environment["BLACKBOX_KEY"], !value.isEmpty {
                (resolved.key, resolved.keySource) = (value, "BLACKBOX_KEY")
            }
            if let server { (resolved.server, resolved.serverSource) = (server, "--server") }
            if let key { (resolved.key, resolved.keySource) = (key, "--key") }
            return resolved
        }

        func endpoint() throws -> CollectorEndpoint {
            let resolved = try resolve()
            guard let server = resolved.server else {
                throw InputProblem(
                    description: "no collector: give --server, set BLACKBOX_SERVER, or put \"server\" in a config file")
            }
            guard let key = resolved.key else {
                throw InputProblem(
                    description: "no ingest key: give --key, set BLACKBOX_KEY, or put \"key\" in a config file")
            }
            do {
                return try CollectorEndpoint(url: server, key: key)
            } catch {
                throw InputProblem(description: error.description)
            }
        }

        static func defaultConfigPath(_ environment: [String: String]) -> String {
            if let base = environment["XDG_CONFIG_HOME"], base.hasPrefix("/") { return "\(base)/blackbox/config.json" }
            return "\(environment["HOME"] ?? "/tmp")/.config/blackbox/config.json"
        }
    }
#endif
