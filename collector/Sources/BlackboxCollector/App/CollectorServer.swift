import Foundation
import Hummingbird
import Logging
import ServiceLifecycle

/// Builds the collector: storage, the ingest pipeline, background services, routes.
public struct CollectorServer: Sendable {
    public let configuration: CollectorConfiguration
    public let store: any CollectorStore
    let blobs: BlobStore
    let metrics = CollectorMetrics()
    let committer: GroupCommitter
    let indexer: LogIndexer
    let reader: BundleReader

    public init(configuration: CollectorConfiguration, store: (any CollectorStore)? = nil) throws {
        self.configuration = configuration
        try FileManager.default.createDirectory(atPath: configuration.dataDirectory, withIntermediateDirectories: true)
        self.store = try store ?? configuration.openStore()
        self.blobs = try BlobStore(
            root: configuration.blobDirectory, temporaryDirectory: configuration.temporaryDirectory)
        self.committer = GroupCommitter(store: self.store, blobs: blobs, window: configuration.groupCommitWindow)
        self.reader = BundleReader(blobs: blobs, maxBytes: configuration.limits.maxEntryBytes)
        self.indexer = LogIndexer(store: self.store, reader: reader)
    }

    /// Migrates, cleans up uploads a previous run left half-received, and returns the application.
    /// `onServerRunning` receives the bound port (useful with port 0).
    public func makeApplication(onServerRunning: @escaping @Sendable (Int) async -> Void = { _ in }) async throws
        -> some ApplicationProtocol
    {
        try await store.migrate()
        blobs.removeTemporaryFiles()
        let router = try await makeRouter()
        var services: [any Service] = [committer, indexer]
        if let days = configuration.retentionDays {
            services.append(
                RetentionService(store: store, blobs: blobs, days: days, interval: configuration.retentionInterval))
        }
        return Application(
            router: router,
            configuration: .init(
                address: .hostname(configuration.host, port: configuration.port), serverName: "blackbox-collector"),
            services: services,
            onServerRunning: { channel in await onServerRunning(channel.localAddress?.port ?? 0) },
            logger: Logger(label: "collector.http"))
    }

    func makeRouter() async throws -> Router<CollectorContext> {
        let router = Router(context: CollectorContext.self)
        let store = self.store
        let metrics = self.metrics
        router.get("health") { _, _ in "ok\n" }
        router.get("ready") { _, _ -> Response in
            do {
                try await store.ping()
                return Response(status: .ok, body: .init(byteBuffer: ByteBuffer(string: "ready\n")))
            } catch {
                return JSONResponse.error(.init(status: 503, code: "storage_unavailable", message: "\(error)"))
            }
        }
        router.get("metrics") { _, _ in
            Response(
                status: .ok, headers: [.contentType: "text/plain; version=0.0.4"],
                body: .init(byteBuffer: ByteBuffer(string: metrics.render())))
        }
        let css = try String(
            contentsOf: Bundle.module.resourceURL!.appendingPathComponent("Static/style.css"), encoding: .utf8)
        router.get("static/style.css") { _, _ in
            Response(status: .ok, headers: [.contentType: "text/css"], body: .init(byteBuffer: ByteBuffer(string: css)))
        }

        let ingest = IngestService(
            store: store, blobs: blobs, limits: configuration.limits, committer: committer, metrics: metrics,
            indexerWakeup: { [indexer] in indexer.wake() },
            uploadActivity: { [indexer] started in indexer.noteUpload(started: started) }, keys: KeyCache(store: store))
        router.post("api/v1/bundles") { request, context in try await ingest.receive(request, context: context) }
        router.get("api/v1/key") { request, _ in await ingest.describeKey(request) }

        let api = router.group("api/v1").add(middleware: AdminAuthentication(store: store, redirectToLogin: false))
        ReadAPI(store: store, reader: reader).register(on: api)

        let web = WebUI(store: store, reader: reader, library: try await WebUI.loadTemplates())
        web.registerLogin(on: router)
        web.register(on: router.group().add(middleware: AdminAuthentication(store: store, redirectToLogin: true)))
        return router
    }

    /// Test and benchmark support: indexes pending log files now.
    public func indexPendingLogs() async { await indexer.indexPending() }

    /// Test support: runs the retention job once as if it were `now`.
    @discardableResult
    public func runRetention(now: Date) async -> Int {
        await RetentionService(
            store: store, blobs: blobs, days: configuration.retentionDays ?? 0,
            interval: configuration.retentionInterval
        ).runOnce(now: now)
    }
}
