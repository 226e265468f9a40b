#if Tools
    import ArgumentParser
    import BlackboxFormat
    import BlackboxUpload
    import Foundation

    struct BundleCommand: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "bundle",
            abstract: "Put log files and crash reports into a bundle zip (docs/bundle.md).",
            discussion: """
                PATH is a diagnostics directory (its outbox reports and log files), another directory (every \
                file below it), or files. JSON files that parse as Blackbox reports go to reports/, the rest \
                to logs/. Content over --max-size is split: OUTPUT-1.zip, OUTPUT-2.zip, …
                """)

        @Argument(help: "Directories or files.") var paths: [String]
        @Option(name: .shortAndLong, help: "The zip to write.") var output: String
        @Option(help: "App name for the manifest when no report names one.") var app: String?
        @Option(help: "Content bytes per bundle before splitting.") var maxSize: Int64 = 16 << 20

        func validate() throws {
            guard maxSize > 0 else { throw ValidationError("--max-size must be positive") }
            guard output.hasSuffix(".zip") else { throw ValidationError("--output must end in .zip") }
        }

        func run() throws {
            do {
                let written = try Self.write(paths: paths, app: app, maxSize: maxSize, into: output)
                for path in written { print(path) }
            } catch let problem as InputProblem {
                throw Self.failing(problem.description)
            } catch {
                throw Self.failing("\(error)")
            }
        }

        /// Writes the bundles (through a temporary directory beside `output`, then renamed) and returns
        /// their paths.
        static func write(paths: [String], app: String?, maxSize: Int64, into output: String) throws -> [String] {
            let inputs = try BundleInputs(paths: paths)
            guard !inputs.items.isEmpty else {
                throw InputProblem(description: "no files to bundle in \(paths.joined(separator: ", "))")
            }
            var writer = BundleWriter(
                app: inputs.app ?? CrashReport.App(name: app ?? "unknown", version: nil, build: nil),
                host: inputs.host ?? ProcessInfo.processInfo.hostName)
            writer.maxBundleBytes = maxSize
            let staging =
                URL(fileURLWithPath: output).deletingLastPathComponent().path + "/.blackbox-bundle-\(UUID().uuidString)"
            defer { try? FileManager.default.removeItem(atPath: staging) }
            let bundles = try writer.write(inputs.items, into: staging)
            let base = String(output.dropLast(4))
            var paths: [String] = []
            for (index, bundle) in bundles.enumerated() {
                let destination = bundles.count == 1 ? output : "\(base)-\(index + 1).zip"
                try? FileManager.default.removeItem(atPath: destination)
                try FileManager.default.moveItem(atPath: bundle.path, toPath: destination)
                paths.append(destination)
            }
            return paths
        }
    }
#endif
