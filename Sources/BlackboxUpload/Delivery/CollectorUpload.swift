#if Upload
    import Blackbox
    import BlackboxFormat
    import Foundation
    import Logging

    /// Uploads an app's reports and log archives to a collector in the background: plug it into
    /// `BlackboxConfiguration.delivery`, and `Blackbox.start` does the rest.
    ///
    /// ```swift
    /// var configuration = BlackboxConfiguration(appName: "shop")
    /// configuration.delivery = CollectorUpload(endpoint: try CollectorEndpoint(url: "https://collector.example.com", key: key))
    /// try Blackbox.start(configuration)
    /// ```
    ///
    /// A pass runs at start (after pending crash reports are processed), after each finished archive
    /// and non-fatal report (debounced), and every `interval`: consent, then new reports and logs into
    /// bundles in the spool, then the spool to the collector (docs/uploading.md). The running
    /// `BlackboxRuntime` runs it (`run`) and cancels it at shutdown; a pass cancelled mid-way leaves
    /// what it had not sent in the spool for the next start.
    public struct CollectorUpload: DiagnosticsDelivery {
        public var endpoint: CollectorEndpoint
        public var consent: UploadConsent
        public var retry = RetryPolicy()
        public var bundles = BundleOptions()
        /// A pass this often even when nothing announced new files. Default 15 minutes; nil: never.
        public var interval: Duration? = .seconds(900)
        /// Ship the active log file's new lines this often (docs/uploading.md, "Logs within a
        /// minute"), so a line is searchable at the collector about this long after it was logged.
        /// Default 20 s; nil: logs go only as finished archives and with reports. While on, bundles
        /// no longer carry the active file's end (`BundleOptions.activeLog`): its lines are shipped.
        public var liveLogInterval: Duration? = .seconds(20)
        /// Wait this long after an announcement before a pass, so a burst makes one bundle. Default 2 s.
        public var debounce: Duration = .seconds(2)
        /// Bytes per second for uploads, or nil for no limit. Default none.
        public var rateLimit: Int?
        private let progress = DeliveryProgress()

        public init(endpoint: CollectorEndpoint, consent: UploadConsent = .always) {
            self.endpoint = endpoint
            self.consent = consent
        }

        /// Passes until cancelled: one at once, then after announcements (debounced) and every
        /// `interval`, one at a time.
        public func run(_ context: DeliveryContext, events: AsyncStream<DeliveryEvent>) async {
            await schedule.run(events: events) { _ = await runPass(context) }
        }

        /// Waits until the first pass of the latest `run` has finished (true), at most `timeout`
        /// (false). For short-lived programs that should not exit before their reports are sent.
        public func waitForStartPass(timeout: Duration) async -> Bool {
            await schedule.waitForStartPass(timeout: timeout)
        }

        private var schedule: DeliverySchedule {
            let every = [interval, liveLogInterval].compactMap { $0 }.min()
            return DeliverySchedule(interval: every, debounce: debounce, progress: progress)
        }

        /// One pass, on the caller's task; what `run` repeats. Public for apps that want to
        /// upload at a moment of their choosing (e.g. before a planned shutdown).
        public func runPass(_ context: DeliveryContext) async -> SpoolUploader.Summary? {
            let logger = Logger(label: "blackbox.upload")
            let configuration = context.configuration
            let spool = Spool(diagnosticsDirectory: context.directory)
            let writer = BundleWriter(
                app: .init(
                    name: configuration.appName, version: configuration.appVersion, build: configuration.appBuild),
                host: ProcessInfo.processInfo.hostName)
            var options = bundles
            var liveLog: (LiveLogShipping, BundleWriter)?
            if liveLogInterval != nil {
                options.activeLog = .never
                liveLog = (
                    LiveLogShipping(directory: context.directory, baseFileName: configuration.baseFileName), writer
                )
            }
            let losses = DeliveryLosses(spool: spool, appVersion: configuration.appVersion, category: "bundle")
            guard
                let pass = await DeliveryPass(
                    context, spool: spool, options: options, consent: consent, logger: logger, liveLog: liveLog,
                    losses: losses)
            else { return nil }
            let selection = pass.selection
            if !selection.isEmpty {
                do {
                    try pass.snapshot.bundle(selection, as: writer, into: spool)
                } catch {
                    logger.error("cannot bundle diagnostics for upload: \(error)")
                }
            }
            do {
                try losses.writeLossBundle(into: spool, writer: writer)
            } catch {
                logger.error("cannot write the bundle of what was lost: \(error)")
            }
            var client = CollectorClient(endpoint: endpoint)
            client.rateLimit = rateLimit
            var uploader = SpoolUploader(spool: spool, transport: client, retry: retry) { event in
                if let (level, text) = event.logLine { logger.log(level: level, "\(text)") }
            }
            uploader.losses = losses
            let summary = await uploader.drain()
            withExtendedLifetime(pass.lock) {}
            return summary
        }
    }

#endif
