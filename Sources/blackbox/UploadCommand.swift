#if Tools
    import ArgumentParser
    import Blackbox
    import BlackboxFormat
    import BlackboxUpload
    import Foundation

    struct Upload: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Upload bundles, diagnostics directories, or log files and reports to a collector.",
            discussion: """
                PATH is a zip (sent as it is, with a stable Upload-Id), a diagnostics directory (its pending \
                raw crash reports are processed first, as the app's next start would; then its new \
                reports and log archives are bundled into its outbox/bundles spool, which is then sent, \
                together with anything the app left there), or other directories and files (bundled first). \
                A bundle is deleted from a spool only after the collector stored it; a refused one moves to \
                outbox/rejected with the reason. Server and key: --server/--key, BLACKBOX_SERVER/BLACKBOX_KEY, \
                or a config file (see `blackbox doctor`).

                With --sentry-dsn, PATH is a diagnostics directory (its new reports and ended runs become \
                envelopes in its outbox/sentry spool) or report JSON files, and they go to a Sentry-compatible \
                server instead (docs/sentry.md); SENTRY_RELEASE and SENTRY_ENVIRONMENT apply. A \
                rate-limited envelope stays in the spool (exit status 3).

                Exit status: 0 everything stored; 1 bad input; 2 the collector refused a bundle for good \
                (400/413/422; kept, with the reason); 3 the collector could not be reached or kept failing \
                (bundles kept for the next run); 4 the collector refused the key (401/403); 64 usage.
                """)

        @Argument(help: "Zips, directories or files.") var paths: [String]
        @OptionGroup var collector: CollectorOptions
        @Option(help: "Attempts per bundle when the collector cannot be reached or answers 5xx.") var attempts = 5
        @Option(help: "Longest wait between attempts, in seconds.") var maxDelay = 30.0
        @Option(help: "Upload at most this many bytes per second.") var limitRate: Int?
        @Option(help: "Content bytes per bundle before splitting (directories and files).") var maxSize: Int64 =
            16 << 20
        @Option(
            name: .customLong("sentry-dsn"),
            help: "Send reports and run counts to a Sentry-compatible server with this DSN instead of a collector.")
        var sentryDSN: String?
        @Flag(help: "With --sentry-dsn: also send each new log archive's lines as Sentry structured logs.")
        var sentryLogs = false
        @Flag(name: .shortAndLong, help: "Print nothing but errors.") var quiet = false

        func validate() throws {
            guard attempts >= 1 else { throw ValidationError("--attempts must be at least 1") }
            guard maxDelay >= 0 else { throw ValidationError("--max-delay must not be negative") }
            if let limitRate, limitRate <= 0 { throw ValidationError("--limit-rate must be positive") }
        }

        func run() async throws {
            processPendingCrashes()
            let staging = NSTemporaryDirectory() + "blackbox-upload-\(UUID().uuidString)"
            defer { try? FileManager.default.removeItem(atPath: staging) }
            var spools: [PreparedSpool] = []
            let transport: any SpoolTransport
            do {
                if let sentryDSN {
                    transport = SentryClient(dsn: try SentryDSN(sentryDSN))
                    spools = try prepareSentrySpools(staging: staging)
                } else {
                    var client = CollectorClient(endpoint: try collector.endpoint())
                    client.rateLimit = limitRate
                    transport = client
                    spools = try prepareSpools(staging: staging)
                }
            } catch let problem as InputProblem {
                throw Self.failing(problem.description)
            } catch let problem as EndpointProblem {
                throw Self.failing(problem.description)
            } catch let problem as SentryDSN.Problem {
                throw Self.failing(problem.description)
            }
            var retry = RetryPolicy()
            retry.maxAttempts = attempts
            retry.maxDelay = .milliseconds(Int64(maxDelay * 1000))
            let progress = ProgressBar(enabled: !quiet && isatty(2) == 1)
            var total = SpoolUploader.Summary()
            var status: Int32 = 0
            for entry in spools {
                var uploader = SpoolUploader(spool: entry.spool, transport: transport, retry: retry) { event in
                    report(event, progress: progress)
                }
                uploader.losses = entry.losses
                let summary = await uploader.drain()
                total.uploaded += summary.uploaded
                total.duplicates += summary.duplicates
                total.rejected += summary.rejected
                total.remaining += summary.remaining
                total.deferred += summary.deferred
                switch summary.stoppedBy {
                case .unauthorized: status = max(status, 4)
                case .unreachable, .cancelled: status = max(status, 3)
                case nil: break
                }
                if summary.rejected > 0 { status = max(status, 2) }
                if summary.deferred > 0 { status = max(status, 3) }
                if case .unauthorized = summary.stoppedBy { break }
            }
            if !quiet {
                let noun = sentryDSN == nil ? "bundle" : "envelope"
                var line = "uploaded \(total.uploaded) \(noun)\(total.uploaded == 1 ? "" : "s")"
                if total.duplicates > 0 { line += " (\(total.duplicates) already stored)" }
                if total.rejected > 0 { line += ", \(total.rejected) refused" }
                if total.remaining > 0 { line += ", \(total.remaining) not sent" }
                if total.deferred > 0 { line += ", \(total.deferred) held back by the server's rate limits" }
                print(line)
            }
            if status != 0 { throw ExitCode(status) }
        }

        /// A spool to send, and the lock that keeps others off it while we do.
        struct PreparedSpool {
            var spool: Spool
            var lock: SpoolLock?
            /// A diagnostics directory's ledger of what its uploads lost for good: what this run's
            /// refusals add goes in the next run's first bundle, as the app's own uploader does.
            var losses: DeliveryLosses? = nil
        }

        /// One spool per diagnostics directory (its own, so that an interrupted upload resumes from it),
        /// and one temporary spool under `staging` for everything else.
        private func prepareSpools(staging: String) throws -> [PreparedSpool] {
            var result: [PreparedSpool] = []
            let temporary = Spool(directory: staging + "/bundles", rejectedDirectory: staging + "/rejected")
            var loose: [String] = []
            for path in paths {
                var isDirectory: ObjCBool = false
                guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
                    throw InputProblem(description: "\(path): no such file or directory")
                }
                if isDirectory.boolValue && DiagnosticsDirectory.isDiagnosticsDirectory(path) {
                    result.append(try spoolDiagnostics(path))
                } else if !isDirectory.boolValue && path.hasSuffix(".zip") {
                    try stage(zip: path, into: temporary)
                } else {
                    loose.append(path)
                }
            }
            if !loose.isEmpty {
                let inputs = try BundleInputs(paths: loose)
                var writer = BundleWriter(
                    app: inputs.app ?? .init(name: "unknown", version: nil, build: nil),
                    host: inputs.host ?? ProcessInfo.processInfo.hostName)
                writer.maxBundleBytes = maxSize
                do {
                    _ = try writer.write(inputs.items, into: temporary.directory)
                } catch {
                    throw InputProblem(description: error.description)
                }
            }
            if FileManager.default.fileExists(atPath: staging) {
                result.append(PreparedSpool(spool: temporary, lock: nil))
            }
            return result
        }

        /// A diagnostics directory's pending raw crash reports become reports first, as the app's next
        /// start would make them: the CLI is how an app that cannot link the uploader, or that died for
        /// good, sends its crash. What cannot be processed is said on stderr, never skipped quietly.
        private func processPendingCrashes() {
            for path in paths where DiagnosticsDirectory.isDiagnosticsDirectory(path) {
                let outcome = CrashReportProcessor(directory: path).processForUpload()
                if !outcome.processed.isEmpty && !quiet {
                    print("\(path): processed \(outcome.processed.count) pending crash report(s)")
                }
                for failure in outcome.failures {
                    FileHandle.standardError.write(Data("blackbox: \(path): a pending crash report: \(failure)\n".utf8))
                }
                for name in outcome.quarantined {
                    FileHandle.standardError.write(
                        Data("blackbox: \(path): a pending crash report was quarantined: \(name)\n".utf8))
                }
                if !outcome.skipped.isEmpty {
                    FileHandle.standardError.write(
                        Data(
                            "blackbox: \(path): \(outcome.skipped.count) pending crash report(s) left: a live process is writing or processing them\n"
                                .utf8))
                }
            }
        }

        private func spoolDiagnostics(_ directory: String) throws -> PreparedSpool {
            let spool = Spool(diagnosticsDirectory: directory)
            guard let lock = SpoolLock(spool: spool) else {
                throw InputProblem(description: "\(directory): another process is uploading from it; try again later")
            }
            var options = BundleOptions()
            options.activeLog = .always
            options.maxBundleBytes = maxSize
            let bases = LogFiles.baseNames(inDirectory: DiagnosticsDirectory(directory).logs)
            var app = CrashReport.App(name: bases.first ?? "unknown")
            for base in bases.isEmpty ? [""] : bases {
                let snapshot = DiagnosticsSnapshot(directory: directory, baseFileName: base, options: options)
                let selection = snapshot.select()
                guard !selection.isEmpty else { continue }
                let inputs = try BundleInputs(paths: selection.reports.map(\.sourcePath))
                let writer = BundleWriter(
                    app: inputs.app ?? .init(name: base.isEmpty ? "unknown" : base, version: nil, build: nil),
                    host: inputs.host ?? ProcessInfo.processInfo.hostName)
                app = writer.app
                do {
                    try snapshot.bundle(selection, as: writer, into: spool)
                } catch {
                    throw InputProblem(description: "\(error)")
                }
            }
            let losses = DeliveryLosses(spool: spool, appVersion: app.version, category: "bundle")
            do {
                try losses.writeLossBundle(
                    into: spool, writer: BundleWriter(app: app, host: ProcessInfo.processInfo.hostName))
            } catch {
                throw InputProblem(description: "\(directory): cannot write the bundle of what was lost: \(error)")
            }
            return PreparedSpool(spool: spool, lock: lock, losses: losses)
        }

        /// A copy of the zip under its Upload-Id, so the user's file is never moved or deleted.
        private func stage(zip path: String, into spool: Spool) throws {
            do {
                let id = try BundleIdentity.uploadID(forZipAt: path)
                try FileManager.default.createDirectory(atPath: spool.directory, withIntermediateDirectories: true)
                let destination = "\(spool.directory)/\(id.uuidString.lowercased()).zip"
                if !FileManager.default.fileExists(atPath: destination) {
                    try FileManager.default.copyItem(atPath: path, toPath: destination)
                }
            } catch let error as BundleError {
                throw InputProblem(description: error.description)
            } catch {
                throw InputProblem(description: "\(path): \(error.localizedDescription)")
            }
        }

        private func report(_ event: UploadEvent, progress: ProgressBar) {
            switch event {
            case .progress(let bundle, let sent, let total):
                progress.update(label: String(bundle.id.uuidString.prefix(8)).lowercased(), sent: sent, total: total)
            case .stored(let bundle, let duplicate):
                progress.finishLine()
                if !quiet && progress.enabled {
                    FileHandle.standardError.write(
                        Data(
                            "stored \(bundle.id.uuidString.lowercased())\(duplicate ? " (already stored)" : "")\n".utf8)
                    )
                }
            case .rejected(let bundle, let answer):
                progress.finishLine()
                FileHandle.standardError.write(
                    Data(
                        "blackbox: the collector refused bundle \(bundle.id.uuidString.lowercased()) for good: \(answer)\n"
                            .utf8))
            case .gaveUp(let bundle, let attempts, let reason):
                progress.finishLine()
                FileHandle.standardError.write(
                    Data(
                        "blackbox: gave up on bundle \(bundle.id.uuidString.lowercased()) after \(attempts) attempts: \(reason)\n"
                            .utf8))
            case .unauthorized, .waiting, .deferred, .localProblem:
                progress.finishLine()
                if let (_, text) = event.logLine {
                    FileHandle.standardError.write(Data("blackbox: \(text)\n".utf8))
                }
            case .started:
                break
            }
        }
    }
#endif
