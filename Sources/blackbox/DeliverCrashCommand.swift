#if Tools
    import ArgumentParser
    import Blackbox
    import BlackboxFormat
    import BlackboxSystem
    import BlackboxUpload
    import Foundation

    /// The helper a crashing process starts when crash-time delivery is on (`CrashTimeDelivery`): sends
    /// one raw report, with the log lines it carries, to the collector while the process waits, and
    /// deletes it once stored. Whatever goes wrong, the raw report stays for the next launch.
    struct DeliverCrash: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "deliver-crash",
            abstract: "Send a raw crash report to the collector right away (started by a crashing app).",
            discussion: """
                Bundles RAW (a file in a diagnostics directory's crashes/pending/) and the log lines it \
                carries, uploads the bundle, and deletes RAW once the collector stored it. The collector \
                builds and symbolicates the report. Server and key as for `blackbox upload`; a crashing \
                app passes them in BLACKBOX_SERVER and BLACKBOX_KEY.

                Exit status: 0 stored (RAW deleted); 1 RAW is not a raw report; 2 refused; 3 not stored \
                in time; 4 the key was refused. RAW stays unless the status is 0.

                With --sentry-dsn DSN (or --sentry and SENTRY_DSN), the helper builds the report itself \
                (symbolicated as the next launch would) and sends it, with the run counts, as Sentry \
                envelopes (docs/sentry.md).
                """)

        @Argument(help: "The raw report.") var raw: String
        @OptionGroup var collector: CollectorOptions
        @Option(name: .customLong("sentry-dsn"), help: "Send it to this Sentry DSN instead of a collector.")
        var sentryDSN: String?
        @Flag(help: "Send it to the Sentry DSN in SENTRY_DSN instead of a collector (how a crashing app asks).")
        var sentry = false
        @Option(help: "Give up after this many seconds.") var deadline = 9.5

        /// A raw report is a few hundred KB at most (512 threads of 128 frames); anything far larger is
        /// not one of ours.
        static let maxRawBytes = 32 << 20

        func run() async throws {
            let bytes: [UInt8]
            let parsed: RawCrashReport
            let destination: Destination
            let checkout: CrashedRunCheckout
            do {
                destination = try self.destination()
                bytes = try Self.read(raw)
                parsed = try RawCrashReport(bytes: bytes)
                guard let found = CrashedRunCheckout(rawReport: raw, parsed: parsed) else {
                    throw InputProblem(description: "not in a diagnostics directory's crashes/pending/ folder")
                }
                checkout = found
            } catch {
                throw Self.failing("\(raw): \(error)")
            }
            let name = String(raw.split(separator: "/").last ?? Substring(raw))
            let base = name.hasSuffix(".raw") ? String(name.dropLast(4)) : name
            // Beside the report, on the diagnostics directory's own (writable) file system.
            let staging = "\(checkout.layout.crashDelivery)/\(base)-\(getpid())"
            defer { try? FileManager.default.removeItem(atPath: staging) }
            let sessions = SessionSummary.summarize(checkout.sessions)
            let started = ContinuousClock.now
            let spool: Spool
            let transport: any SpoolTransport
            let expected: Int
            do {
                switch destination {
                case .collector(let endpoint):
                    spool = Spool(directory: staging + "/bundle", rejectedDirectory: staging + "/rejected")
                    try writeBundle(
                        parsed, rawPath: raw, rawSize: Int64(bytes.count), base: base, staging: staging,
                        inside: checkout.layout.crashDelivery, sessions: sessions, into: spool)
                    transport = CollectorClient(endpoint: endpoint)
                    expected = 1
                case .sentry(let dsn):
                    spool = Spool(
                        directory: staging + "/sentry", rejectedDirectory: staging + "/rejected",
                        fileExtension: "envelope")
                    expected = try writeEnvelopes(rawPath: raw, sessions: sessions, into: spool)
                    transport = SentryClient(dsn: dsn)
                }
            } catch {
                throw Self.failing("\(raw): cannot bundle it: \(error)", status: 3)
            }

            var retry = RetryPolicy()
            retry.maxAttempts = 3
            retry.initialDelay = .milliseconds(200)
            retry.maxDelay = .seconds(1)
            let uploader = SpoolUploader(spool: spool, transport: transport, retry: retry) { event in
                if case .progress = event { return }
                if let (_, text) = event.logLine { FileHandle.standardError.write(Data("blackbox: \(text)\n".utf8)) }
            }
            let remaining = Duration.milliseconds(Int64(max(deadline, 0.1) * 1000)) - (ContinuousClock.now - started)
            let summary = await Self.within(max(remaining, .milliseconds(100))) { await uploader.drain() }
            guard let summary, summary.uploaded + summary.duplicates == expected else {
                let status: Int32 =
                    switch summary?.stoppedBy {
                    case .unauthorized: 4
                    case nil where (summary?.rejected ?? 0) > 0: 2
                    default: 3
                    }
                throw Self.failing("\(raw): not delivered; it stays for the next launch", status: status)
            }
            checkout.commitDelivered()
        }

        enum Destination {
            case collector(CollectorEndpoint)
            case sentry(SentryDSN)
        }

        private func destination() throws -> Destination {
            if let sentryDSN { return .sentry(try SentryDSN(sentryDSN)) }
            if sentry {
                guard let dsn = try SentryDSN.fromEnvironment() else {
                    throw InputProblem(description: "--sentry needs SENTRY_DSN in the environment")
                }
                return .sentry(dsn)
            }
            return .collector(try collector.endpoint())
        }

        /// The crash as a Sentry event (built and symbolicated here, as the next launch would) and the
        /// run counts as session aggregates; how many envelopes were written.
        private func writeEnvelopes(rawPath: String, sessions: [SessionSummary], into spool: Spool) throws -> Int {
            let report = try CrashReportProcessor.report(fromRawFile: rawPath)
            let environment = ProcessInfo.processInfo.environment
            let writer = SentryEnvelopeWriter(
                release: environment["SENTRY_RELEASE"].flatMap { $0.isEmpty ? nil : $0 },
                environment: environment["SENTRY_ENVIRONMENT"].flatMap { $0.isEmpty ? nil : $0 } ?? "production",
                app: report.app)
            let tail = report.logTail.map { $0 + "\n" }.joined()
            var envelopes = [try writer.event(report, logTail: Array(tail.utf8))]
            envelopes.append(try writer.sessions(sessions))
            for envelope in envelopes.compactMap({ $0 }) { try writer.commit(envelope, into: spool) }
            return envelopes.compactMap { $0 }.count
        }

        /// `reports/<name>.raw` as it is, and `reports/<name>.tail.log`: the intact log records the
        /// handler copied from the journal, as text (the collector has no journal reader).
        private func writeBundle(
            _ parsed: RawCrashReport, rawPath: String, rawSize: Int64, base: String, staging: String,
            inside delivery: String, sessions: [SessionSummary], into spool: Spool
        ) throws {
            // Private like the rest of the diagnostics directory (the bundle holds log lines), level by level.
            for directory in [delivery, staging, spool.directory] {
                guard mkdir(directory, 0o700) == 0 || errno == EEXIST else {
                    throw InputProblem(description: "cannot create \(directory): \(errnoDescription())")
                }
            }
            var items = [
                BundleItem(sourcePath: rawPath, entryPath: "reports/\(base).raw", kind: .rawReport, range: 0..<rawSize)
            ]
            if let start = parsed.journalStart {
                let lines = JournalTail.lines(bytes: parsed.journalBytes, startPosition: start, limit: .max)
                if !lines.isEmpty {
                    let tail = "\(staging)/\(base).tail.log"
                    let text = Data(lines.map { $0 + "\n" }.joined().utf8)
                    try text.write(to: URL(fileURLWithPath: tail))
                    items.append(
                        BundleItem(
                            sourcePath: tail, entryPath: "reports/\(base).tail.log", kind: .log,
                            range: 0..<Int64(text.count)))
                }
            }
            var writer = BundleWriter(
                app: .init(
                    name: parsed.header["app"] ?? "unknown", version: parsed.header["app-version"],
                    build: parsed.header["app-build"]),
                host: parsed.header["host"] ?? ProcessInfo.processInfo.hostName)
            writer.sessions = sessions
            _ = try writer.write(items, into: spool.directory)
        }

        private static func read(_ path: String) throws -> [UInt8] {
            guard let bytes = DurableFile.read(path, limit: maxRawBytes + 1) else {
                throw InputProblem(description: "cannot open it")
            }
            guard bytes.count <= maxRawBytes else { throw InputProblem(description: "larger than a raw report can be") }
            return bytes
        }

        /// `work`'s result, or nil when it did not finish within `limit` (it is cancelled).
        private static func within<T: Sendable>(_ limit: Duration, _ work: @escaping @Sendable () async -> T) async
            -> T?
        {
            await withTaskGroup(of: T?.self) { group in
                group.addTask { await work() }
                group.addTask {
                    try? await Task.sleep(for: limit)
                    return nil
                }
                let first = await group.next() ?? nil
                group.cancelAll()
                return first
            }
        }
    }
#endif
