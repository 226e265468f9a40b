#if Upload
    import Blackbox
    import BlackboxFormat
    import Foundation
    import Logging
    import Synchronization

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
    /// bundles in the spool, then the spool to the collector (docs/uploading.md).
    public struct CollectorUpload: DiagnosticsDelivery {
        public var endpoint: CollectorEndpoint
        public var consent: UploadConsent
        public var retry = RetryPolicy()
        public var bundles = BundleOptions()
        /// A pass this often even when nothing announced new files. Default 15 minutes; nil: never.
        public var interval: Duration? = .seconds(900)
        /// Wait this long after an announcement before a pass, so a burst makes one bundle. Default 2 s.
        public var debounce: Duration = .seconds(2)
        /// Bytes per second for uploads, or nil for no limit. Default none.
        public var rateLimit: Int?
        private let loop = DeliveryLoop()

        public init(endpoint: CollectorEndpoint, consent: UploadConsent = .always) {
            self.endpoint = endpoint
            self.consent = consent
        }

        public func started(_ context: DeliveryContext) { loop.start(self, context: context) }

        /// Ends the background loop (`Blackbox.shutdown` calls it): a pass in flight is cancelled, and
        /// what it had not sent stays in the spool for the next start.
        public func stop() { loop.stop() }

        /// Test support: waits until the loop that `started` began has ended (after `stop`).
        func waitUntilStopped() async { await loop.ended() }

        /// Waits until the pass that `Blackbox.start` began has finished (true), at most `timeout`
        /// (false). For short-lived programs that should not exit before their reports are sent.
        public func waitForStartPass(timeout: Duration) async -> Bool {
            let deadline = ContinuousClock.now + timeout
            while !loop.startPassFinished {
                guard ContinuousClock.now < deadline else { return false }
                try? await Task.sleep(for: .milliseconds(50))
            }
            return true
        }

        public func archiveFinished(path: String) { loop.announce() }
        public func reportWritten(path: String) { loop.announce() }

        /// One pass, on the caller's task; what `started` runs in a loop. Public for apps that want to
        /// upload at a moment of their choosing (e.g. before a planned shutdown).
        public func runPass(_ context: DeliveryContext) async -> SpoolUploader.Summary? {
            let logger = Logger(label: "blackbox.upload")
            let configuration = context.configuration
            let spool = Spool(diagnosticsDirectory: context.directory)
            guard let lock = SpoolLock(spool: spool) else {
                logger.debug("another process is uploading from \(context.directory); skipping this pass")
                return nil
            }
            defer { withExtendedLifetime(lock) {} }
            _ = context.core.flush(timeout: .seconds(2))
            let snapshot = DiagnosticsSnapshot(
                directory: context.directory, baseFileName: configuration.baseFileName, options: bundles)
            let selection = snapshot.select()
            let waiting = spool.pending().count
            guard !selection.isEmpty || waiting > 0 else { return nil }
            let request = ConsentRequest(
                reports: selection.reports.count,
                logFiles: selection.archives.count + (selection.activeLog == nil ? 0 : 1),
                waitingBundles: waiting, bytes: selection.bytes)
            guard await consent.allows(request) else {
                logger.debug(
                    "upload not allowed by consent; \(request.reports) reports and \(waiting) bundles stay local")
                return nil
            }
            if !selection.isEmpty {
                let writer = BundleWriter(
                    app: .init(
                        name: configuration.appName, version: configuration.appVersion, build: configuration.appBuild),
                    host: ProcessInfo.processInfo.hostName)
                do {
                    try snapshot.bundle(selection, as: writer, into: spool)
                } catch {
                    logger.error("cannot bundle diagnostics for upload: \(error)")
                }
            }
            var client = CollectorClient(endpoint: endpoint)
            client.rateLimit = rateLimit
            let uploader = SpoolUploader(spool: spool, client: client, retry: retry) { event in
                if let (level, text) = event.logLine { logger.log(level: level, "\(text)") }
            }
            return await uploader.drain()
        }
    }

    /// Runs passes one at a time: at start, after announcements (debounced) and on the interval. One
    /// loop per `CollectorUpload` value; a later `Blackbox.start` with the same value hands the running
    /// loop its new context instead of starting a second one. `stop` ends it; a later start begins anew.
    final class DeliveryLoop: Sendable {
        private struct State {
            var context: DeliveryContext?
            var task: Task<Void, Never>?
            /// Wakes the running loop; a new one per run (a stream whose consumer was cancelled is over).
            var wakeup: AsyncStream<Void>.Continuation?
        }
        private let state = Mutex(State())
        private let startPass = Atomic<Bool>(false)

        var startPassFinished: Bool { startPass.load(ordering: .acquiring) }

        func announce() { _ = state.withLock { $0.wakeup?.yield() } }

        func start(_ upload: CollectorUpload, context newContext: DeliveryContext) {
            state.withLock { state in
                let running = state.context != nil
                state.context = newContext
                if running {
                    state.wakeup?.yield()
                    return
                }
                let (wakeups, wakeup) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
                state.wakeup = wakeup
                startPass.store(false, ordering: .relaxed)
                state.task = Task.detached(priority: .background) {
                    await self.run(upload, first: newContext, wakeups: wakeups, wakeup: wakeup)
                }
            }
        }

        func stop() {
            let task = state.withLock { state in
                state.context = nil
                state.wakeup?.finish()
                state.wakeup = nil
                return state.task
            }
            task?.cancel()
        }

        /// Waits for the last loop started to end.
        func ended() async {
            await state.withLock { $0.task }?.value
        }

        private func run(
            _ upload: CollectorUpload, first: DeliveryContext, wakeups: AsyncStream<Void>,
            wakeup: AsyncStream<Void>.Continuation
        ) async {
            _ = await upload.runPass(first)
            startPass.store(true, ordering: .releasing)
            let ticker = upload.interval.map { interval in
                Task.detached {
                    while !Task.isCancelled {
                        try? await Task.sleep(for: interval)
                        wakeup.yield()
                    }
                }
            }
            defer { ticker?.cancel() }
            for await _ in wakeups {
                try? await Task.sleep(for: upload.debounce)
                guard !Task.isCancelled, let current = state.withLock({ $0.context }) else { break }
                _ = await upload.runPass(current)
            }
        }
    }
#endif
