#if Upload
    import Blackbox
    import BlackboxFormat
    import Foundation

    /// Chooses what from an app's diagnostics directory goes into the next bundles (docs/uploading.md):
    /// every report in the outbox, every log archive not sent before, with the reports the end of the
    /// active log file, and the counts of the runs that ended since the last bundle.
    public struct DiagnosticsSnapshot: Sendable {
        public var directory: String
        /// The log files' base name (`BlackboxConfiguration.baseFileName`).
        public var baseFileName: String
        public var options: BundleOptions

        public init(directory: String, baseFileName: String, options: BundleOptions = BundleOptions()) {
            self.directory = directory
            self.baseFileName = baseFileName
            self.options = options
        }

        public struct Selection: Sendable {
            public var reports: [BundleItem] = []
            public var archives: [BundleItem] = []
            public var activeLog: BundleItem?
            /// `runs/ended/` files, counted into `sessions`.
            public var endedSessions: [String] = []
            public var sessions: [SessionSummary] = []
            /// The requests this process served that ended since its counts were last sent
            /// (`BundleOptions.liveRequestInterval`); only an app's own uploader has them.
            package var liveRequests: RequestTally.Unreported?
            public var items: [BundleItem] { reports + archives + (activeLog.map { [$0] } ?? []) }
            public var isEmpty: Bool {
                reports.isEmpty && archives.isEmpty && sessions.isEmpty && liveRequests == nil
            }
            public var bytes: Int64 { items.reduce(0) { $0 + $1.size } }
        }

        /// What would go out now. Call `LoggingCore.flush` first so the active file is complete.
        public func select() -> Selection {
            var selection = Selection()
            for path in layout.reportFiles() {
                if let size = fileSize(path) {
                    selection.reports.append(
                        BundleItem(
                            sourcePath: path, entryPath: Self.entryPath(ofReport: path), kind: .report, range: 0..<size)
                    )
                }
            }
            let logs = layout.logs
            if options.includeArchives {
                let sent = SentArchives(diagnosticsDirectory: directory)
                for name in LogFiles.archivesOfEveryInstance(inDirectory: logs, baseName: baseFileName)
                where !sent.contains(name) {
                    if let size = fileSize("\(logs)/\(name)"), size > 0 {
                        selection.archives.append(
                            BundleItem(
                                sourcePath: "\(logs)/\(name)", entryPath: "logs/\(name)", kind: .log, range: 0..<size))
                    }
                }
            }
            let ended = EndedSession.pending(in: layout)
            selection.endedSessions = ended.paths
            selection.sessions = SessionSummary.summarize(ended.sessions)
            if let interval = options.liveRequestInterval {
                selection.liveRequests = RequestTally.shared.unreported(in: directory, every: interval)
            }
            // Never a bundle for the active file alone: a periodic pass would send it again and again.
            let wantsActive =
                switch options.activeLog {
                case .never: false
                case .withReports: !selection.reports.isEmpty
                case .always: !selection.reports.isEmpty || !selection.archives.isEmpty
                }
            if wantsActive {
                let name = LogFiles.activeFileName(baseName: baseFileName)
                selection.activeLog = activeTail(path: "\(logs)/\(name)", entryName: name)
            }
            return selection
        }

        /// The one bundling sequence (the app's uploader and `blackbox upload` both use it): writes
        /// `selection` as bundles into `spool`, and only once they are durable marks it bundled.
        @discardableResult
        public func bundle(_ selection: Selection, as writer: BundleWriter, into spool: Spool) throws -> [BundleWriter
            .Written]
        {
            var writer = writer
            writer.maxBundleBytes = options.maxBundleBytes
            writer.sessions = selection.sessions
            if let live = selection.liveRequests {
                // Counted under the running version, with no run ended: the run's end adds the rest.
                writer.sessions.append(
                    SessionSummary(
                        appVersion: writer.app.version,
                        firstStart: Date(timeIntervalSince1970: Double(live.sinceNanoseconds) / 1e9), lastEnd: Date(),
                        requests: live.counts))
            }
            let written = try writer.write(selection.items, into: spool.directory)
            try markBundled(selection)
            // Only once durable: a crash before this sends these counts again with the run's end (a
            // double count of one interval's requests, never a loss).
            if let live = selection.liveRequests { RequestTally.shared.markReported(live) }
            return written
        }

        /// After the bundles holding `selection` are durable in the spool: the reports leave the outbox
        /// (JSON and text) and the archives are recorded as sent.
        package func markBundled(_ selection: Selection) throws(DurableFile.Failure) {
            try markBundled(
                reports: selection.reports.map(\.sourcePath), endedSessions: selection.endedSessions,
                archives: selection.archives.map(\.entryPath))
        }

        /// Marks what bundles waiting in `spool` hold, from their manifests. A process killed after a
        /// bundle became durable and before `markBundled` left its archives unrecorded and its reports
        /// in the outbox: chosen again, they would go out a second time under a new upload id. (The
        /// runs it counted are not recovered: the manifest has their sums, not their files.)
        package func markBundled(waitingIn spool: Spool) throws(DurableFile.Failure) {
            let reports = Dictionary(
                layout.reportFiles().map { (Self.entryPath(ofReport: $0), $0) }, uniquingKeysWith: { first, _ in first }
            )
            var reportPaths: [String] = []
            var logEntries: [String] = []
            for bundle in spool.pending() {
                for entry in BundleIdentity.manifest(ofZipAt: bundle.path)?.entries ?? [] {
                    if let path = reports[entry.path] {
                        reportPaths.append(path)
                    } else if entry.kind == .log {
                        // Recorded only if it names an archive (the active file's segments do not).
                        logEntries.append(entry.path)
                    }
                }
            }
            try markBundled(reports: reportPaths, endedSessions: [], archives: logEntries)
        }

        /// `reports` leave the outbox, `endedSessions` are deleted, and the archives named by the log
        /// entries `archives` (`logs/<name>`) are recorded as sent.
        private func markBundled(reports: [String], endedSessions: [String], archives: [String])
            throws(DurableFile.Failure)
        {
            let outbox = Outbox(layout)
            for report in reports { outbox.remove(reportAt: report) }
            for path in endedSessions { unlink(path) }
            guard !archives.isEmpty else { return }
            var sent = SentArchives(diagnosticsDirectory: directory)
            let present = Set(LogFiles.archivesOfEveryInstance(inDirectory: layout.logs, baseName: baseFileName))
            try sent.record(archives.map { String($0.dropFirst("logs/".count)) }, stillPresent: present)
        }

        /// A report's entry in a bundle: `reports/<its file name>`.
        private static func entryPath(ofReport path: String) -> String {
            "reports/" + (path.split(separator: "/").last.map(String.init) ?? path)
        }

        private var layout: DiagnosticsDirectory { DiagnosticsDirectory(directory) }

        /// The last `activeLogMaxBytes` of the active file, starting at a line boundary.
        private func activeTail(path: String, entryName: String) -> BundleItem? {
            guard let size = fileSize(path), size > 0 else { return nil }
            var start = max(0, size - options.activeLogMaxBytes)
            if start > 0, let handle = FileHandle(forReadingAtPath: path) {
                defer { try? handle.close() }
                try? handle.seek(toOffset: UInt64(start - 1))
                let window = (try? handle.read(upToCount: 64 << 10)) ?? Data()
                guard let newline = window.firstIndex(of: UInt8(ascii: "\n")) else { return nil }
                start += Int64(newline - window.startIndex)
            }
            guard start < size else { return nil }
            return BundleItem(sourcePath: path, entryPath: "logs/\(entryName)", kind: .log, range: start..<size)
        }

    }

    /// What bundles carry and how large they get.
    public struct BundleOptions: Sendable {
        public enum ActiveLog: Sendable, Equatable {
            /// Never: only finished archives.
            case never
            /// When the bundle carries crash or non-fatal reports (the context around them). Default.
            case withReports
            /// In every bundle made (one is made when there are reports or archives). The same lines
            /// may arrive again later inside their archive.
            case always
        }
        /// Upload each finished log archive once. Default true.
        public var includeArchives = true
        public var activeLog: ActiveLog = .withReports
        /// How much of the active log's end to take. Default 1 MiB.
        public var activeLogMaxBytes: Int64 = 1 << 20
        /// Content per bundle (see `BundleWriter.maxBundleBytes`). Default 16 MiB.
        public var maxBundleBytes: Int64 = 16 << 20
        /// What the spool may hold while the server is unreachable or refusing. Default nil: the log
        /// retention's bytes and age (`SpoolCap(retention:)`).
        public var spoolCap: SpoolCap?
        /// A running app sends the requests it served (`Blackbox.handleRequest`) this often with its
        /// bundles, rather than only when its run ends (a server may run for weeks). Default 60 s;
        /// nil: with the run's end only.
        public var liveRequestInterval: Duration? = .seconds(60)
        public init() {}
    }

    /// The size of a regular file; nil for anything else, a symbolic link included (a link planted in
    /// the diagnostics directory must not carry another file into a bundle).
    func fileSize(_ path: String) -> Int64? {
        var info = stat()
        guard lstat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { return nil }
        return Int64(info.st_size)
    }
#endif
