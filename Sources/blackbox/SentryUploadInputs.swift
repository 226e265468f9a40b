#if Tools
    import Blackbox
    import BlackboxFormat
    import BlackboxUpload
    import Foundation

    extension Upload {
        /// `--sentry-dsn`: a diagnostics directory's new reports and ended runs go into its own Sentry
        /// spool (so an interrupted upload resumes from it); report files into one under `staging`.
        /// Log files and zips have no place in Sentry and are refused by name.
        func prepareSentrySpools(staging: String) throws -> [PreparedSpool] {
            let environment = ProcessInfo.processInfo.environment
            let release = environment["SENTRY_RELEASE"].flatMap { $0.isEmpty ? nil : $0 }
            let sentryEnvironment = environment["SENTRY_ENVIRONMENT"].flatMap { $0.isEmpty ? nil : $0 } ?? "production"
            var result: [PreparedSpool] = []
            let temporary = Spool(
                directory: staging + "/sentry", rejectedDirectory: staging + "/rejected", fileExtension: "envelope")
            for path in paths {
                var isDirectory: ObjCBool = false
                guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
                    throw InputProblem(description: "\(path): no such file or directory")
                }
                if isDirectory.boolValue && DiagnosticsDirectory.isDiagnosticsDirectory(path) {
                    let spool = Spool.sentry(diagnosticsDirectory: path)
                    guard let lock = SpoolLock(spool: spool) else {
                        throw InputProblem(
                            description: "\(path): another process is uploading from it; try again later")
                    }
                    var options = BundleOptions()
                    options.includeArchives = sentryLogs
                    options.activeLogMaxBytes = 256 << 10
                    let bases = LogFiles.baseNames(inDirectory: DiagnosticsDirectory(path).logs)
                    var app = CrashReport.App(name: bases.first ?? "unknown")
                    for base in bases.isEmpty ? [""] : bases {
                        let snapshot = DiagnosticsSnapshot(directory: path, baseFileName: base, options: options)
                        let selection = snapshot.select()
                        guard !selection.isEmpty else { continue }
                        let inputs = try BundleInputs(paths: selection.reports.map(\.sourcePath))
                        app = inputs.app ?? .init(name: base.isEmpty ? "unknown" : base)
                        let writer = SentryEnvelopeWriter(
                            release: release, environment: sentryEnvironment, app: app, structuredLogs: sentryLogs)
                        do {
                            for unreadable in try writer.write(selection, from: snapshot, into: spool) {
                                FileHandle.standardError.write(
                                    Data("blackbox: \(unreadable): not a readable report; not sent\n".utf8))
                            }
                        } catch {
                            throw InputProblem(description: "\(path): cannot write envelopes: \(error)")
                        }
                    }
                    // What earlier uploads lost for good goes as a client report naming the release.
                    let losses = DeliveryLosses(spool: spool, appVersion: app.version, category: "error")
                    do {
                        try losses.writeClientReport(
                            into: spool,
                            release: release ?? SentryEvent.release(of: app).map(SentryEvent.releaseName))
                    } catch {
                        throw InputProblem(description: "\(path): cannot write the client report: \(error)")
                    }
                    result.append(PreparedSpool(spool: spool, lock: lock, losses: losses))
                } else if !isDirectory.boolValue, path.hasSuffix(".json"),
                    let data = FileManager.default.contents(atPath: path), let report = try? CrashReport.decode(data)
                {
                    let writer = SentryEnvelopeWriter(release: release, environment: sentryEnvironment, app: report.app)
                    do {
                        guard let envelope = try writer.event(report, logTail: nil) else {
                            throw InputProblem(
                                description: "\(path): a \(report.kind.rawValue) report has no Sentry event")
                        }
                        try writer.commit(envelope, into: temporary)
                    } catch let problem as InputProblem {
                        throw problem
                    } catch {
                        throw InputProblem(description: "\(path): cannot write its envelope: \(error)")
                    }
                } else {
                    throw InputProblem(
                        description:
                            "\(path): only diagnostics directories and report JSON files go to Sentry (log files and zips stay with a Blackbox collector)"
                    )
                }
            }
            if FileManager.default.fileExists(atPath: temporary.directory) {
                result.append(PreparedSpool(spool: temporary, lock: nil))
            }
            return result
        }
    }
#endif
