#if Tools
    import ArgumentParser
    import Blackbox
    import BlackboxSymbols
    import BlackboxUpload
    import Foundation

    struct Symbols: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Archive the symbols of a build in a collector, to symbolicate its crash reports there.",
            subcommands: [SymbolsUpload.self])
    }

    struct SymbolsUpload: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "upload",
            abstract: "Upload the debug info of binaries, shared libraries and separate debug files.",
            discussion: """
                PATH is a file (a binary, a shared library, a separate debug file) or a directory, searched \
                for ELF files (for example a `.build-id/xx/yyyy.debug` tree). Each file's build-id is read; \
                the collector is asked once which build-ids it has debug info for, and the others are sent, \
                gzip-compressed. One line per file: build-id, name, and uploaded / already there / no debug \
                info / no build-id. Server: --server, BLACKBOX_SERVER or "server" in the config file; token: \
                --token, BLACKBOX_SYMBOLS_TOKEN or "symbolsToken" in the config file (a symbols key, \
                `blackbox-collector keys create --kind symbols`, or the admin token). See docs/symbols.md.

                Exit status: 0 every file with debug info is on the collector; 1 bad input; 2 the collector \
                refused a file; 3 the collector could not be reached or kept failing; 4 the collector refused \
                the token (401/403); 64 usage.
                """)

        @Argument(help: "Binaries, shared libraries, debug files or directories of them.") var paths: [String]
        @Option(help: "The collector's base URL, e.g. https://collector.example.com.") var server: String?
        @Option(help: "A symbols key or the admin token.") var token: String?
        @Option(help: "A config file with server and symbolsToken.") var config: String?
        @Option(help: "Attempts per file when the collector cannot be reached or answers 5xx.") var attempts = 3
        @Flag(
            help: """
                Also upload the source files each file's debug info names (those on this machine), for the \
                lines around each frame on the collector's report page.
                """) var sources = false
        @Flag(name: .shortAndLong, help: "Print nothing but errors.") var quiet = false

        func validate() throws {
            guard attempts >= 1 else { throw ValidationError("--attempts must be at least 1") }
        }

        func run() async throws {
            let client: CollectorClient
            let files: SymbolFiles
            do {
                client = CollectorClient(endpoint: try endpoint())
                files = try SymbolFiles(paths: paths)
            } catch let problem as InputProblem {
                throw Self.failing(problem.description)
            }
            var plan = SymbolUploadPlan(files.candidates)
            let wanted = plan.buildIDsToAsk
            if !wanted.isEmpty {
                do {
                    switch try await client.checkSymbols(buildIDs: wanted) {
                    case .present(let present): plan.markPresent(present)
                    case .refused(let answer):
                        throw Self.failing(
                            "the collector refused the question: \(answer)",
                            status: [401, 403].contains(answer.status) ? 4 : 2)
                    }
                } catch let problem as ConnectionProblem {
                    throw Self.failing("cannot reach the collector: \(problem)", status: 3)
                }
            }
            let progress = ProgressBar(enabled: !quiet && isatty(2) == 1)
            var status: Int32 = 0
            for index in plan.entries.indices {
                if case .upload = plan.entries[index].action {
                    let outcome = await send(plan.entries[index].candidate, client: client, progress: progress)
                    plan.entries[index].action = .sent(outcome)
                    status = max(status, Self.exitStatus(outcome))
                }
                progress.finishLine()
                if !quiet || Self.exitStatus(plan.entries[index].action) != 0 { print(plan.entries[index].line) }
                if status == 4 { break }  // the token is wrong: every other file would be refused too
            }
            if sources, status != 4 {
                for entry in plan.entries where entry.sendsSources {
                    let (line, sourceStatus) = await sendSources(of: entry.candidate, client: client)
                    status = max(status, sourceStatus)
                    if !quiet || sourceStatus != 0 { print(line) }
                    if status == 4 { break }
                }
            }
            if !quiet { print(plan.summary) }
            if status != 0 { throw ExitCode(status) }
        }

        /// Bundles the sources the file's line tables name (`SourceBundleWriter`) and sends the bundle
        /// as the build-id's `<name>.src.zip`. Another bundle for the build-id already there (409) is
        /// no failure: the first one stays (`SymbolUpload`).
        private func sendSources(of candidate: SymbolFiles.Candidate, client: CollectorClient) async -> (
            String, Int32
        ) {
            let buildID = candidate.info.buildID ?? "-"
            let prefix = "\(buildID)  \(candidate.path)  sources:"
            let names: [String]
            do {
                names = try DWARFSourceFiles.read(path: candidate.path)
            } catch {
                return ("\(prefix) none read: \(error)", 0)
            }
            let bundle = NSTemporaryDirectory() + "blackbox-sources-\(UUID().uuidString).zip"
            let compressed = bundle + ".gz"
            defer {
                unlink(bundle)
                unlink(compressed)
            }
            let written: SourceBundleWriter.Written
            do {
                written = try SourceBundleWriter.write(
                    sources: names, buildID: buildID, objectName: candidate.name,
                    architecture: candidate.info.architecture ?? "unknown", to: bundle)
                guard written.files > 0 else {
                    return ("\(prefix) none of the \(names.count) files its debug info names is on this machine", 0)
                }
                try Gzip.compress(bundle, to: compressed)
            } catch {
                return ("\(prefix) cannot bundle them: \(error)", 1)
            }
            let counted =
                "\(written.files) files\(written.skipped > 0 ? ", \(written.skipped) not found or too large" : "")"
            var outcome = UploadOutcome.retryLater(reason: "not sent")
            for attempt in 1...attempts {
                outcome = await client.uploadSymbols(
                    compressedPath: compressed, buildID: buildID, name: candidate.name + ".src.zip")
                guard case .retryLater = outcome, attempt < attempts else { break }
                try? await Task.sleep(for: .seconds(attempt))
            }
            switch outcome {
            case .stored(let duplicate):
                return ("\(prefix) \(duplicate ? "already there" : "uploaded") (\(counted))", 0)
            case .rejected(let answer) where answer.status == 409:
                return ("\(prefix) another bundle of this build-id is there already", 0)
            case .rejected(let answer), .unauthorized(let answer):
                return ("\(prefix) refused: \(answer)", Self.exitStatus(outcome))
            case .retryLater(let reason), .deferred(let reason):
                return ("\(prefix) failed: \(reason)", Self.exitStatus(outcome))
            }
        }

        private func endpoint() throws -> CollectorEndpoint {
            let resolved = try CollectorOptions.resolve(server: server, key: nil, config: config)
            let environment = ProcessInfo.processInfo.environment["BLACKBOX_SYMBOLS_TOKEN"].flatMap {
                $0.isEmpty ? nil : $0
            }
            guard let server = resolved.server else {
                throw InputProblem(
                    description: "no collector: give --server, set BLACKBOX_SERVER, or put \"server\" in a config file")
            }
            guard let token = token ?? environment ?? resolved.symbolsToken else {
                throw InputProblem(
                    description:
                        "no token: give --token, set BLACKBOX_SYMBOLS_TOKEN, or put \"symbolsToken\" in a config file")
            }
            do {
                return try CollectorEndpoint(url: server, key: token)
            } catch {
                throw InputProblem(description: "\(error)")
            }
        }

        /// Compresses the file into a temporary one and sends it, resending after failures that may pass.
        private func send(_ candidate: SymbolFiles.Candidate, client: CollectorClient, progress: ProgressBar) async
            -> UploadOutcome
        {
            guard let buildID = candidate.info.buildID else { return .retryLater(reason: "no build-id") }
            let compressed = NSTemporaryDirectory() + "blackbox-symbols-\(UUID().uuidString).gz"
            defer { unlink(compressed) }
            do {
                try Gzip.compress(candidate.path, to: compressed)
            } catch {
                return .retryLater(reason: error.description)
            }
            var outcome = UploadOutcome.retryLater(reason: "not sent")
            for attempt in 1...attempts {
                outcome = await client.uploadSymbols(compressedPath: compressed, buildID: buildID, name: candidate.name)
                {
                    sent, total in progress.update(label: candidate.name, sent: sent, total: total)
                }
                guard case .retryLater = outcome, attempt < attempts else { break }
                try? await Task.sleep(for: .seconds(attempt))
            }
            return outcome
        }

        static func exitStatus(_ outcome: UploadOutcome) -> Int32 {
            switch outcome {
            case .stored: 0
            case .rejected: 2
            case .retryLater, .deferred: 3
            case .unauthorized: 4
            }
        }

        static func exitStatus(_ action: SymbolUploadPlan.Action) -> Int32 {
            if case .sent(let outcome) = action { exitStatus(outcome) } else { 0 }
        }
    }
#endif
