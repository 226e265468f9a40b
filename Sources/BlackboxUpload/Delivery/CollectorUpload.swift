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

    public func started(_ context: DeliveryContext) {
        let settings = self
        Task.detached(priority: .background) { await settings.loop.run(settings, context: context) }
    }

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
            logger.debug("upload not allowed by consent; \(request.reports) reports and \(waiting) bundles stay local")
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
/// loop its new context instead of starting a second one.
final class DeliveryLoop: Sendable {
    private let wakeups: AsyncStream<Void>
    private let continuation: AsyncStream<Void>.Continuation
    private let context = Mutex<DeliveryContext?>(nil)
    private let startPass = Atomic<Bool>(false)

    var startPassFinished: Bool { startPass.load(ordering: .acquiring) }

    init() {
        (wakeups, continuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    func announce() { continuation.yield() }

    func run(_ upload: CollectorUpload, context newContext: DeliveryContext) async {
        let alreadyRunning = context.withLock { current in
            defer { current = newContext }
            return current != nil
        }
        if alreadyRunning {
            announce()
            return
        }
        _ = await upload.runPass(newContext)
        startPass.store(true, ordering: .releasing)
        let ticker = upload.interval.map { interval in
            Task.detached { [continuation] in
                while !Task.isCancelled {
                    try? await Task.sleep(for: interval)
                    continuation.yield()
                }
            }
        }
        defer { ticker?.cancel() }
        for await _ in wakeups {
            try? await Task.sleep(for: upload.debounce)
            guard let current = context.withLock({ $0 }) else { continue }
            _ = await upload.runPass(current)
        }
    }
}
