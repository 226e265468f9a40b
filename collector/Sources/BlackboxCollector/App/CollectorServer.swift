import Foundation
import Hummingbird
import Logging
import NIOCore
import ServiceLifecycle

/// Builds the collector: storage, the ingest pipeline, background services, routes.
public struct CollectorServer: Sendable {
    public let configuration: CollectorConfiguration
    public let store: any CollectorStore
    let blobs: any BlobStorage
    let symbolBlobs: any BlobStorage
    /// The bucket both blob stores are in, when they are (`--blob-url`): checked at start.
    let bucket: S3Client?
    let metrics = CollectorMetrics()
    let committer: GroupCommitter
    let indexer: LogIndexer
    /// Forwards the ingested log lines over OTLP/HTTP, when configured.
    let forwarder: OTLPForwarder?
    /// Uploads arriving now: background work steps back for them.
    let activity = IngestActivity()
    let symbolication: SymbolicationService
    /// Groups made under an older signature version take the current one.
    let regrouping: RegroupingService
    let alerts: AlertDispatcher
    let reader: BundleReader
    /// The endpoints that receive uploads, each through the stages every upload shares
    /// (`IngestService`) and with its format, which also reads its stored blobs back.
    let endpoints: [any IngestEndpoint]

    public init(configuration: CollectorConfiguration, store: (any CollectorStore)? = nil) throws {
        self.configuration = configuration
        // Everything the collector writes (the database and its journals, blobs, uploads in flight,
        // its own logs) holds users' personal data: private, whatever umask it was started with.
        umask(0o077)
        try FileManager.default.createDirectory(
            atPath: configuration.dataDirectory, withIntermediateDirectories: true,
            attributes: [.posixPermissions: 0o700])
        // One made beforehand (`mkdir -p`, 0755) would show the entries' names to every user.
        var status = stat()
        if stat(configuration.dataDirectory, &status) == 0, status.st_uid == geteuid(), status.st_mode & 0o077 != 0 {
            chmod(configuration.dataDirectory, 0o700)
        }
        self.store = try store ?? configuration.openStore()
        (self.blobs, self.symbolBlobs, self.bucket) = try Self.openBlobStores(configuration)
        self.committer = GroupCommitter(store: self.store, blobs: blobs, window: configuration.groupCommitWindow)
        // The upload formats, each received by its endpoint below; their blobs are read back by format.
        let inspectionMemory = MemoryBudget(limit: configuration.limits.maxReportBytesInFlight)
        let zipBundles = ZipBundleFormat(limits: configuration.limits, inspectionMemory: inspectionMemory)
        let sentryEnvelopes = SentryEnvelopeFormat(limits: configuration.limits, inspectionMemory: inspectionMemory)
        let otlpLogs = OTLPLogsFormat(limits: configuration.limits, inspectionMemory: inspectionMemory)
        self.reader = BundleReader(
            blobs: blobs, maxBytes: configuration.limits.maxEntryBytes,
            formats: [zipBundles, sentryEnvelopes, otlpLogs])
        let metrics = self.metrics
        self.forwarder = configuration.logForwarding.map { OTLPForwarder(settings: $0, metrics: metrics) }
        self.indexer = LogIndexer(
            store: self.store, reader: reader, activity: activity,
            maxLinesPerFile: configuration.limits.maxIndexedLinesPerFile, forwarder: forwarder)
        self.symbolication = SymbolicationService(
            store: self.store, symbolBlobs: symbolBlobs,
            symbolizers: configuration.symbolizerPath.map { path in
                (0..<max(1, configuration.symbolizerLanes)).map { _ in SymbolizerProcess(executable: path) }
            } ?? [], metrics: metrics,
            activity: activity)
        self.regrouping = RegroupingService(store: self.store)
        self.alerts = AlertDispatcher(
            store: self.store, baseURL: configuration.publicURL ?? "http://\(configuration.host):\(configuration.port)",
            pollInterval: configuration.alertPollInterval, targets: configuration.webhookTargets,
            digestWindow: configuration.alertDigestWindow)
        let ingest = IngestService(
            store: self.store,
            admission: UploadAdmission(
                keys: KeyCache(store: self.store), limits: configuration.limits,
                usage: ProjectUsage(store: self.store), blobs: blobs, metrics: metrics),
            receiver: BodyReceiver(limits: configuration.limits, blobs: blobs), committer: committer,
            metrics: metrics, indexerWakeup: { [indexer] in indexer.wake() },
            symbolicationWakeup: { [symbolication] in symbolication.wake() },
            alertsWakeup: { [alerts] in alerts.wake() },
            uploadActivity: { [activity] started in activity.noteUpload(started: started) })
        self.endpoints = [
            BundleEndpoint(ingest: ingest, format: zipBundles),
            SentryEndpoint(ingest: ingest, format: sentryEnvelopes),
            OTLPEndpoint(ingest: ingest, format: otlpLogs),
        ]
    }

    /// Migrates, cleans up uploads a previous run left half-received, and returns the application.
    /// `onServerRunning` receives the bound port (useful with port 0).
    public func makeApplication(onServerRunning: @escaping @Sendable (Int) async -> Void = { _ in }) async throws
        -> some ApplicationProtocol
    {
        try await prepare()
        let router = try await makeRouter()
        let logger = Logger(label: "collector.http")
        Self.raiseDescriptorLimit(toFit: configuration.limits.maxConnections)
        let services = services(includingBackground: true)
        return Application(
            router: router,
            server: .http1(configuration: .init(idleTimeout: TimeAmount(configuration.limits.idleTimeout))),
            configuration: .init(
                address: .hostname(configuration.host, port: configuration.port), serverName: "blackbox-collector",
                // The queue of connections not yet accepted holds a burst as large as the connection
                // limit (the kernel caps it at net.core.somaxconn). At Hummingbird's 256, 1,100
                // connections opened at once overflowed it, and the next client's SYN was dropped and
                // sent again by its kernel a second later: /health answered in 1.018 s.
                backlog: configuration.limits.maxConnections,
                availableConnectionsDelegate: .maximum(configuration.limits.maxConnections, logger: logger)),
            services: services,
            onServerRunning: { channel in await onServerRunning(channel.localAddress?.port ?? 0) },
            logger: logger)
    }

    /// Migrates, checks the bucket, and cleans up uploads a previous run left half-received.
    func prepare() async throws {
        try await store.migrate()
        try await bucket?.checkBucket()
        await blobs.recover()
        await symbolBlobs.recover()
    }

    /// What answering requests needs running (the store, when it is a service, and the group
    /// committer) and, `includingBackground`, the work behind them: forwarding, indexing,
    /// symbolication, regrouping, alerts, retention. A group stops its services in reverse order: the
    /// store goes last, after everything that uses it.
    func services(includingBackground background: Bool) -> [any Service] {
        var services: [any Service] = (store as? any Service).map { [$0] } ?? []
        // The forwarder before the indexer: stopped after it, it still sends what the indexer offered.
        if background, let forwarder { services.append(forwarder) }
        services.append(committer)
        guard background else { return services }
        services += [indexer, symbolication, regrouping, alerts]
        // Without a retention period it still runs: for the per-project bundle quota.
        services.append(
            RetentionService(
                store: store, blobs: blobs, committer: committer, days: configuration.retentionDays,
                bytesPerProject: configuration.limits.maxBundleBytesPerProject,
                interval: configuration.retentionInterval))
        return services
    }

    /// A one-time web sign-in link (a path) for the admin token's project.
    public func loginLink(adminToken: String) async throws -> String? {
        guard let key = try await store.authenticate(secret: adminToken), key.kind == .admin else { return nil }
        return try await WebSessions(store: store, lifetime: configuration.sessionLifetime).makeLink(for: key)
    }

    /// A one-time web sign-in link (a path) for a project's first active admin key.
    public static func loginLink(store: any CollectorStore, projectID: Int64) async throws -> String? {
        guard
            let key = try await store.keys().first(where: {
                $0.projectID == projectID && $0.kind == .admin && $0.revokedAt == nil
            })
        else { return nil }
        return try await WebSessions(store: store, lifetime: .seconds(3600)).makeLink(for: key)
    }

    /// Every connection costs a descriptor: raise the soft limit toward the hard one so that the
    /// connection limit, not `EMFILE` (which makes accepting fail for everyone), is what binds.
    /// The bundles' and the symbol files' stores: directories (`<data>/blobs` or a shared one), or
    /// areas of one bucket with a local cache between them and readers.
    static func openBlobStores(_ configuration: CollectorConfiguration) throws -> (
        blobs: any BlobStorage, symbolBlobs: any BlobStorage, bucket: S3Client?
    ) {
        guard let blobURL = configuration.blobURL else {
            let blobs = try DirectoryBlobStore(
                root: configuration.blobDirectory, temporaryDirectory: configuration.temporaryDirectory,
                commitPool: GroupCommitter.flushPool)
            let symbolBlobs = try DirectoryBlobStore(
                root: configuration.symbolDirectory, temporaryDirectory: configuration.temporaryDirectory,
                fileExtension: "elf")
            return (blobs, symbolBlobs, nil)
        }
        guard configuration.sharedBlobDirectory == nil else {
            throw StorageError.invalidConfiguration("a blob directory and a blob URL: choose one")
        }
        let client = S3Client(
            configuration: try S3Configuration(blobURL: blobURL, environment: configuration.awsEnvironment),
            http: S3Client.http)
        let cache = try LocalBlobCache(directory: configuration.cacheDirectory, maxBytes: configuration.blobCacheBytes)
        let blobs = try S3BlobStore(
            client: client, area: "blobs/", fileExtension: "zip", spool: configuration.temporaryDirectory, cache: cache)
        let symbolBlobs = try S3BlobStore(
            client: client, area: "symbols/", fileExtension: "elf", spool: configuration.temporaryDirectory,
            cache: cache)
        return (blobs, symbolBlobs, client)
    }

    static func raiseDescriptorLimit(toFit connections: Int) {
        var limit = rlimit()
        guard getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return }
        let wanted = rlim_t(connections + 1_024)
        if limit.rlim_cur < wanted {
            limit.rlim_cur = min(wanted, limit.rlim_max)
            setrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit)
        }
    }

    func makeRouter() async throws -> Router<CollectorContext> {
        let router = Router(context: CollectorContext.self)
        router.add(middleware: ServerErrorLogging())
        router.add(middleware: SecurityHeaders())
        let store = self.store
        let metrics = self.metrics
        router.get("health") { _, _ in "ok\n" }
        let (blobs, minFreeBytes) = (self.blobs, configuration.limits.minFreeBytes)
        let bucketHealth = bucket.map(BucketHealth.init)
        // Details after the first line: what works in a degraded way without failing readiness.
        let readiness =
            symbolication.executable.map { "symbolizer: \($0)\n" }
            ?? "symbolizer: missing (install llvm: reports are not symbolicated on the collector)\n"
        router.get("ready") { _, _ -> Response in
            do {
                try await store.ping()
            } catch {
                throw APIError.storageUnavailable(error)
            }
            if let available = blobs.availableBytes(), available < minFreeBytes {
                throw APIError.diskLow(available: available, needed: minFreeBytes)
            }
            if let bucketHealth, let failure = await bucketHealth.failure() {
                throw APIError.blobStoreUnavailable(failure)
            }
            return Response(status: .ok, body: .init(byteBuffer: ByteBuffer(string: "ready\n" + readiness)))
        }
        router.get("metrics") { _, _ in
            Response(
                status: .ok, headers: [.contentType: "text/plain; version=0.0.4"],
                body: .init(byteBuffer: ByteBuffer(string: metrics.render())))
        }
        for (name, contentType) in [("style.css", "text/css"), ("page.js", "text/javascript")] {
            let text = try String(
                contentsOf: Bundle.module.resourceURL!.appendingPathComponent("Static/\(name)"), encoding: .utf8)
            router.get("static/\(name)") { _, _ in
                Response(
                    status: .ok, headers: [.contentType: contentType], body: .init(byteBuffer: ByteBuffer(string: text))
                )
            }
        }

        for endpoint in endpoints { endpoint.register(on: router) }

        let sessions = WebSessions(store: store, lifetime: configuration.sessionLifetime)
        let api = router.group("api/v1")
            .add(middleware: AdminAuthentication(store: store, sessions: sessions, redirectToLogin: false))
            .group(context: AuthenticatedContext.self)
        // A one-time sign-in link for a browser, for scripts and operators holding the admin token.
        api.post("login-links") { _, context in
            struct Link: Encodable { var path: String }
            return try JSONResponse.make(Link(path: try await sessions.makeLink(for: context.key)), status: .created)
        }
        ReadAPI(store: store, reader: reader).register(on: api)
        GroupStatusAPI(store: store).register(on: api)
        AlertsAPI(store: store, targets: configuration.webhookTargets).register(on: api)

        let symbols = SymbolRoutes(
            index: store,
            upload: SymbolUpload(
                index: store, blobs: symbolBlobs, limits: configuration.limits,
                lateSymbols: { [store, symbolication] projectID, buildID in
                    try await store.requestSymbolication(projectID: projectID, buildID: buildID)
                    symbolication.wake()
                }, metrics: metrics),
            blobs: symbolBlobs, limits: configuration.limits)
        let symbolsAuthentication = AdminAuthentication(
            store: store, sessions: sessions, redirectToLogin: false, accepts: [.admin, .symbols])
        symbols.registerAPI(
            on: router.group("api/v1/symbols").add(middleware: symbolsAuthentication)
                .group(context: AuthenticatedContext.self))
        SentryDebugFiles(
            store: store, upload: symbols.upload,
            chunks: DebugFileChunks(
                chunks: ChunkStore(
                    directory: "\(configuration.temporaryDirectory)/sentry-chunks",
                    maxBytesPerProject: Int64(configuration.limits.maxSymbolFileBytes)),
                blobs: symbolBlobs, chunkBytes: SentryDebugFiles.chunkBytes,
                maxRequestBytes: SentryDebugFiles.chunkBytes * SentryDebugFiles.chunksPerRequest + (64 << 10),
                chunksPerRequest: SentryDebugFiles.chunksPerRequest,
                maxCompressionRatio: configuration.limits.maxCompressionRatio),
            publicURL: configuration.publicURL
        ).register(
            on: router.group("api/0").add(middleware: symbolsAuthentication).group(context: AuthenticatedContext.self))
        symbols.registerDebuginfod(
            on: router.group("buildid").add(middleware: symbolsAuthentication).group(context: AuthenticatedContext.self)
        )

        let web = WebUI(
            store: store, reader: reader, symbolizer: symbolication.executable, symbolBlobs: symbolBlobs,
            pages: try await PageRenderer.loadTemplates(), sessions: sessions, publicURL: configuration.publicURL)
        web.registerSignIn(on: router)
        web.register(
            on: router.group()
                .add(middleware: AdminAuthentication(store: store, sessions: sessions, redirectToLogin: true))
                .group(context: AuthenticatedContext.self))
        return router
    }

    /// Test and benchmark support: symbolicates pending reports now.
    @discardableResult
    public func symbolicatePending() async -> Int { await symbolication.symbolicatePending() }

    /// Test and benchmark support: indexes pending log files now.
    public func indexPendingLogs() async { await indexer.indexPending() }

    /// Regroups what has an older signature version now (for tests); returns how many groups changed.
    @discardableResult
    public func regroupOlderSignatures() async -> Int { await regrouping.regroupAll() }

    /// Test support: runs the retention job once as if it were `now`.
    @discardableResult
    public func runRetention(now: Date) async -> Int {
        await RetentionService(
            store: store, blobs: blobs, committer: committer, days: configuration.retentionDays,
            bytesPerProject: configuration.limits.maxBundleBytesPerProject, interval: configuration.retentionInterval
        ).runOnce(now: now)
    }
}
