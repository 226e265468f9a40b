#if Tools
    import ArgumentParser
    import Blackbox
    import BlackboxFormat
    import BlackboxUpload
    import Foundation

    struct Doctor: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Check the upload configuration, a diagnostics directory and the connection to the collector.",
            discussion: """
                Prints one line per check: ok, warn or FAIL. The config file is --config, $BLACKBOX_CONFIG, \
                or $XDG_CONFIG_HOME/blackbox/config.json (default ~/.config/blackbox/config.json), a JSON \
                object {"server": "https://…", "key": "…"}; BLACKBOX_SERVER and BLACKBOX_KEY override it, \
                and flags override both. Exit status: 0 no FAIL, 1 at least one FAIL.
                """)

        @Argument(help: "A diagnostics directory to check.") var directory: String?
        @OptionGroup var collector: CollectorOptions

        func run() async throws {
            var report = CheckReport()
            checkSymbolizer(&report)
            if let directory { checkDirectory(directory, &report) }
            await checkCollector(&report)
            if report.failures > 0 { throw ExitCode(1) }
        }

        private func checkSymbolizer(_ report: inout CheckReport) {
            let candidates =
                [ProcessInfo.processInfo.environment["BLACKBOX_SYMBOLIZER"]].compactMap { $0 }
                + (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").map {
                    "\($0)/llvm-symbolizer"
                }
            if let found = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0) }) {
                report.ok("llvm-symbolizer: \(found)")
            } else {
                report.warn("llvm-symbolizer not found: crash reports keep offsets and build-ids but no function names")
            }
        }

        private func checkDirectory(_ path: String, _ report: inout CheckReport) {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue else {
                report.fail("\(path): no such directory")
                return
            }
            guard access(path, W_OK | X_OK) == 0 else {
                report.fail("\(path): not writable by this user")
                return
            }
            var info = stat()
            if stat(path, &info) == 0, info.st_mode & 0o077 != 0 {
                report.warn(
                    "\(path): readable by others (mode \(String(info.st_mode & 0o777, radix: 8))); logs can hold personal data"
                )
            } else {
                report.ok("\(path): private, writable")
            }
            let layout = DiagnosticsDirectory(path)
            let journal = layout.journal
            if FileManager.default.fileExists(atPath: journal) {
                do {
                    let pending = try JournalInspector.pendingLines(path: journal)
                    let owner = pending.ownerPID.map {
                        kill($0, 0) == 0 ? "in use by pid \($0)" : "last used by pid \($0), not running"
                    }
                    report.ok(
                        "journal: \(owner ?? "no owner recorded"), \(pending.lines.count) lines not yet in a log file")
                } catch {
                    report.fail("journal: \(error)")
                }
            } else {
                report.warn("no journal: Blackbox has not started with this directory")
            }
            for (_, run) in RunRecord.all(in: layout) {
                let state = kill(run.pid, 0) == 0 ? "running" : "not running (ended unseen)"
                let outputs = run.outputs.map { $0.isEmpty ? "none" : $0.joined(separator: ", ") } ?? "not recorded"
                report.ok("run pid \(run.pid) (\(state)): outputs \(outputs)")
            }
            let counts: [(String, String, String, (String) -> Bool)] = [
                (
                    "crashes/pending", layout.pendingCrashes, "raw crash reports waiting for the app's next start",
                    {
                        $0.hasPrefix("crash-") && $0.contains(".raw")
                    }
                ),
                (
                    "crashes/quarantine", layout.quarantine, "raw crash reports whose processing failed",
                    {
                        $0.hasSuffix(".raw")
                    }
                ),
                ("outbox", layout.outbox, "reports not yet bundled", DiagnosticsDirectory.isReportFileName),
                ("outbox/bundles", layout.spool, "bundles waiting for upload", { $0.hasSuffix(".zip") }),
                ("outbox/rejected", layout.rejected, "bundles the collector refused", { $0.hasSuffix(".zip") }),
                ("logs", layout.logs, "log files", { $0.hasSuffix(".log") || $0.hasSuffix(".log.gz") }),
            ]
            for (folder, directory, meaning, matches) in counts {
                let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
                let count = names.filter(matches).count
                let line = "\(folder): \(count) \(meaning)"
                if directory == layout.rejected && count > 0 || directory == layout.quarantine && count > 0 {
                    report.warn(line)
                } else {
                    report.ok(line)
                }
            }
            for (path, rejection) in Spool(diagnosticsDirectory: path).rejected() {
                report.warn("  \(path): \(rejection.answer)")
            }
        }

        private func checkCollector(_ report: inout CheckReport) async {
            let resolved: CollectorOptions.Resolved
            do {
                resolved = try collector.resolve()
            } catch {
                report.fail("configuration: \(error)")
                return
            }
            report.ok("config file: \(resolved.configFile ?? "none")")
            guard let server = resolved.server else {
                report.fail("no collector configured (--server, BLACKBOX_SERVER or a config file)")
                return
            }
            report.ok("collector: \(server) (from \(resolved.serverSource))")
            guard let key = resolved.key else {
                report.fail("no ingest key configured (--key, BLACKBOX_KEY or a config file)")
                return
            }
            report.ok("ingest key: \(key.prefix(6))… (from \(resolved.keySource))")
            let client: CollectorClient
            do {
                client = CollectorClient(endpoint: try CollectorEndpoint(url: server, key: key))
            } catch {
                report.fail(error.description)
                return
            }
            do {
                let health = try await client.get("/ready", authenticated: false)
                if health.status == 200 {
                    report.ok("collector reachable and ready")
                } else {
                    report.fail("collector answered /ready with HTTP \(health.status): \(health.body.prefix(200))")
                }
                let check = try await client.get("/api/v1/key", authenticated: true)
                switch check.status {
                case 200:
                    report.ok(
                        "the collector accepts the key: \(check.body.trimmingCharacters(in: .whitespacesAndNewlines))")
                case 401, 403:
                    report.fail(
                        "the collector refuses the key: \(check.body.trimmingCharacters(in: .whitespacesAndNewlines))")
                default: report.fail("key check: HTTP \(check.status)")
                }
            } catch {
                report.fail("cannot reach \(server): \(error)")
            }
        }
    }

    /// Prints checks as they are made and counts failures.
    struct CheckReport {
        var failures = 0
        mutating func ok(_ text: String) { print("ok    \(text)") }
        mutating func warn(_ text: String) { print("warn  \(text)") }
        mutating func fail(_ text: String) {
            failures += 1
            print("FAIL  \(text)")
        }
    }
#endif
