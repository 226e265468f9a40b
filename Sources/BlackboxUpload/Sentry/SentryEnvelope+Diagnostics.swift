#if Upload
    import Blackbox
    import BlackboxFormat
    import BlackboxSentry
    import Foundation

    /// The envelopes of a delivery pass, written into the Sentry spool (each durable before the
    /// reports it holds leave the outbox): one per report, with the log's end attached to crashes
    /// and hangs; one with the sessions of the runs that ended.
    public struct SentryEnvelopeWriter: Sendable {
        /// Sentry's release; nil: each report's `<app>@<version>+<build>`.
        public var release: String?
        public var environment: String?
        /// The app the sessions are counted for (its version when a run recorded none).
        public var app: CrashReport.App
        /// The end of the active log, attached to fatal and hang events as `blackbox.log`.
        public var attachLogTail = true
        /// The selection's log archives as Sentry structured logs (`log` items).
        public var structuredLogs = false

        public init(
            release: String?, environment: String?, app: CrashReport.App, attachLogTail: Bool = true,
            structuredLogs: Bool = false
        ) {
            self.release = release
            self.environment = environment
            self.app = app
            self.attachLogTail = attachLogTail
            self.structuredLogs = structuredLogs
        }

        /// Writes the selection's envelopes into `spool`, then marks it sent (`markBundled`). Returns
        /// the reports and archives that could not be read (they count as sent all the same: a file no
        /// reader can decode would otherwise be tried on every pass).
        public func write(
            _ selection: DiagnosticsSnapshot.Selection, from snapshot: DiagnosticsSnapshot, into spool: Spool
        ) throws -> [String] {
            var unreadable: [String] = []
            let logTail = attachLogTail ? selection.activeLog.flatMap(Self.read) : nil
            for item in selection.reports where item.entryPath.hasSuffix(".json") {
                guard let bytes = Self.read(item), let report = try? CrashReport.decode(Data(bytes)) else {
                    unreadable.append(item.sourcePath)
                    continue
                }
                if let envelope = try event(report, logTail: logTail) { try commit(envelope, into: spool) }
            }
            if let envelope = try sessions(selection.sessions) { try commit(envelope, into: spool) }
            if structuredLogs {
                let logs = SentryLogRecords(release: release ?? SentryEvent.release(of: app), environment: environment)
                for archive in selection.archives {
                    // A damaged archive is not retried: what it gave before the damage is already spooled.
                    do {
                        try logs.envelopes(ofFile: archive.sourcePath) { try commit($0, into: spool) }
                    } catch {
                        unreadable.append(archive.sourcePath)
                    }
                }
            }
            try snapshot.markBundled(selection)
            return unreadable
        }

        /// The event of a report with its attachments; nil for a report Sentry has no meaning for.
        public func event(_ report: CrashReport, logTail: [UInt8]?) throws -> SentryEnvelope? {
            guard
                var event = SentryEvent(
                    report: report, release: release ?? SentryEvent.release(of: report.app), environment: environment)
            else { return nil }
            let encoder = SentryEnvelope.jsonEncoder()
            var payload = try encoder.encode(event)
            for step in SentryEvent.Trim.allCases where payload.count > Self.maxEventBytes {
                event.trim(step)
                payload = try encoder.encode(event)
            }
            var items = [SentryEnvelope.Item(type: "event", payload: payload, contentType: "application/json")]
            if let logTail, !logTail.isEmpty, event.level == "fatal" || report.kind == .hang {
                items.append(
                    .init(
                        type: "attachment", payload: Data(logTail), contentType: "text/plain", filename: "blackbox.log")
                )
            }
            return SentryEnvelope(eventID: event.eventID, sdk: SentryEvent.envelopeSDK, items: items)
        }

        /// Release health: one `sessions` aggregate per release (exited, crashed, abnormal: killed or
        /// hung and never recovered). Nil when nothing ended or there is no release to count it under.
        public func sessions(_ summaries: [SessionSummary]) throws -> SentryEnvelope? {
            var items: [SentryEnvelope.Item] = []
            let encoder = SentryEnvelope.jsonEncoder()
            for summary in summaries where summary.total > 0 {
                let version = summary.appVersion ?? app.version
                let sessionRelease =
                    release
                    ?? SentryEvent.release(
                        of: .init(
                            name: app.name, version: version, build: version == app.version ? app.build : nil))
                guard let sessionRelease = sessionRelease.map(SentryEvent.releaseName) else { continue }
                let aggregate = SentrySessionAggregates(
                    attrs: .init(release: sessionRelease, environment: environment),
                    aggregates: [
                        .init(
                            started: ReportTime.format(Self.hour(of: summary.firstStart)), exited: summary.clean,
                            crashed: summary.crashed, abnormal: summary.killed + summary.hung)
                    ])
                items.append(.init(type: "sessions", payload: try encoder.encode(aggregate)))
            }
            return items.isEmpty ? nil : SentryEnvelope(sdk: SentryEvent.envelopeSDK, items: items)
        }

        /// Below Relay's 1 MiB limit for an event, with room for its envelope.
        static let maxEventBytes = 1_000_000

        /// Durable in `spool` (fsync and rename) before it returns.
        public func commit(_ envelope: SentryEnvelope, into spool: Spool) throws {
            try FileManager.default.createDirectory(
                atPath: spool.directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            let path = "\(spool.directory)/\(UUID().uuidString.lowercased()).\(spool.fileExtension)"
            try DurableFile.write(try envelope.encoded(), to: path)
        }

        static func hour(of date: Date) -> Date {
            Date(timeIntervalSince1970: (date.timeIntervalSince1970 / 3600).rounded(.down) * 3600)
        }

        static func read(_ item: BundleItem) -> [UInt8]? {
            guard let handle = FileHandle(forReadingAtPath: item.sourcePath) else { return nil }
            defer { try? handle.close() }
            do {
                try handle.seek(toOffset: UInt64(item.range.lowerBound))
                return Array(try handle.read(upToCount: Int(item.size)) ?? Data())
            } catch {
                return nil
            }
        }
    }
#endif
