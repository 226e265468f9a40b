#if Upload
    import Blackbox
    import BlackboxFormat
    import BlackboxSentry
    import Foundation
    import Logging

    /// Delivers an app's reports and sessions to a Sentry-compatible server (Sentry, GlitchTip,
    /// Bugsink, Blackbox's own collector): plug it into `BlackboxConfiguration.delivery`.
    ///
    /// ```swift
    /// var configuration = BlackboxConfiguration(appName: "shop")
    /// configuration.delivery = try SentryDelivery(dsn: "https://<key>@o0.ingest.sentry.io/42")
    /// try Blackbox.start(configuration)
    /// ```
    ///
    /// The same contract as `CollectorUpload` (docs/uploading.md): a pass at start, after new reports
    /// (debounced) and every `interval`; consent first; each report becomes an envelope, durable in
    /// `<dir>/outbox/sentry/` before the report leaves the outbox; envelopes are deleted only once
    /// the server accepted them, retried with backoff on 5xx and no connection, held back while their
    /// category is rate-limited (`Retry-After`, `X-Sentry-Rate-Limits`), kept in `outbox/rejected/`
    /// when refused for good. docs/sentry.md maps reports to events field by field.
    public struct SentryDelivery: DiagnosticsDelivery {
        public var dsn: SentryDSN
        /// Sentry's release; default `SENTRY_RELEASE`, else `<app name>@<version>+<build>` of each report.
        public var release: String?
        /// Default `SENTRY_ENVIRONMENT`, else `production` (Sentry's default).
        public var environment: String?
        public var consent: UploadConsent
        public var retry = RetryPolicy()
        /// Attach the end of the active log (at most `logTailBytes`) to crash, OOM and hang events.
        /// Default true.
        public var attachLog = true
        /// Default 256 KiB (Sentry keeps attachments apart from events, within its attachment quota).
        public var logTailBytes: Int64 = 256 << 10
        /// Send each finished log archive's lines as Sentry structured logs (`log` items, a quota of
        /// their own). Default false: Sentry keeps logs only where logs are enabled for the project
        /// (Blackbox's collector keeps them; Bugsink drops them).
        public var structuredLogs = false
        /// A pass this often even when nothing announced new files. Default 15 minutes; nil: never.
        public var interval: Duration? = .seconds(900)
        /// Wait this long after an announcement before a pass. Default 2 s.
        public var debounce: Duration = .seconds(2)
        /// Kept across passes, so a limit the server set holds for every later envelope.
        public let rateLimits = SentryRateLimits()
        private let progress = DeliveryProgress()

        /// `release` and `environment` from `SENTRY_RELEASE` and `SENTRY_ENVIRONMENT` in
        /// `processEnvironment` (the process's own by default).
        public init(
            dsn: SentryDSN, consent: UploadConsent = .always,
            processEnvironment: [String: String] = ProcessInfo.processInfo.environment
        ) {
            self.dsn = dsn
            self.consent = consent
            self.release = processEnvironment["SENTRY_RELEASE"].flatMap { $0.isEmpty ? nil : $0 }
            self.environment =
                processEnvironment["SENTRY_ENVIRONMENT"].flatMap { $0.isEmpty ? nil : $0 } ?? "production"
        }

        public init(dsn: String, consent: UploadConsent = .always) throws(SentryDSN.Problem) {
            self.init(dsn: try SentryDSN(dsn), consent: consent)
        }

        /// From `SENTRY_DSN` (and `SENTRY_RELEASE`, `SENTRY_ENVIRONMENT`); nil when it is not set.
        public static func fromEnvironment(
            _ environment: [String: String] = ProcessInfo.processInfo.environment, consent: UploadConsent = .always
        ) throws(SentryDSN.Problem) -> SentryDelivery? {
            guard let dsn = try SentryDSN.fromEnvironment(environment) else { return nil }
            return SentryDelivery(dsn: dsn, consent: consent, processEnvironment: environment)
        }

        public func run(_ context: DeliveryContext, events: AsyncStream<DeliveryEvent>) async {
            await schedule.run(events: events) { _ = await runPass(context) }
        }

        /// Waits until the first pass of the latest `run` has finished (true), at most `timeout`.
        public func waitForStartPass(timeout: Duration) async -> Bool {
            await schedule.waitForStartPass(timeout: timeout)
        }

        private var schedule: DeliverySchedule {
            DeliverySchedule(interval: interval, debounce: debounce, progress: progress)
        }

        /// One pass on the caller's task: what `run` repeats.
        public func runPass(_ context: DeliveryContext) async -> SpoolUploader.Summary? {
            let logger = Logger(label: "blackbox.upload.sentry")
            let configuration = context.configuration
            let spool = Spool.sentry(diagnosticsDirectory: context.directory)
            let losses = DeliveryLosses(spool: spool, appVersion: configuration.appVersion, category: "error")
            guard
                let pass = await DeliveryPass(
                    context, spool: spool, options: options, consent: consent, logger: logger, losses: losses)
            else { return nil }
            if !pass.selection.isEmpty {
                let writer = SentryEnvelopeWriter(
                    release: release, environment: environment,
                    app: .init(
                        name: configuration.appName, version: configuration.appVersion, build: configuration.appBuild),
                    attachLogTail: attachLog, structuredLogs: structuredLogs)
                do {
                    for path in try writer.write(pass.selection, from: pass.snapshot, into: spool) {
                        logger.warning("cannot read \(path); it is not sent to Sentry")
                    }
                } catch {
                    logger.error("cannot write Sentry envelopes: \(error)")
                }
            }
            do {
                let app = CrashReport.App(
                    name: configuration.appName, version: configuration.appVersion, build: configuration.appBuild)
                try losses.writeClientReport(
                    into: spool, release: release.map(SentryEvent.releaseName) ?? SentryEvent.release(of: app))
            } catch {
                logger.error("cannot write the client report of what was lost: \(error)")
            }
            let client = SentryClient(dsn: dsn, rateLimits: rateLimits)
            var uploader = SpoolUploader(spool: spool, transport: client, retry: retry) { event in
                if let (level, text) = event.logLine { logger.log(level: level, "\(text)") }
            }
            uploader.losses = losses
            let summary = await uploader.drain()
            withExtendedLifetime(pass.lock) {}
            return summary
        }

        /// Reports and run counts, the active log's end with crashes, and the archives when they go
        /// as structured logs.
        private var options: BundleOptions {
            var options = BundleOptions()
            options.includeArchives = structuredLogs
            options.activeLog = attachLog ? .withReports : .never
            options.activeLogMaxBytes = logTailBytes
            // Sentry counts a Blackbox SDK's session aggregates as runs: requests go with the run's end.
            options.liveRequestInterval = nil
            return options
        }
    }
#endif
