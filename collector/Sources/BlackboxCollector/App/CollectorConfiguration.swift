import Crypto
import Foundation

/// Everything the collector needs to run. Every limit has a default and can be set by a flag or an
/// environment variable (`blackbox-collector serve --help` lists them; docs/collector.md explains).
public struct CollectorConfiguration: Sendable {
    public var host = "127.0.0.1"
    public var port = 8080
    /// SQLite database, blobs, temporary uploads and the collector's own logs live here.
    public var dataDirectory: String
    /// A PostgreSQL URL (`postgres://user:password@host:5432/database`) for the scale-out store;
    /// nil: the embedded SQLite database in the data directory. Default nil.
    public var databaseURL: String?
    /// A blob directory shared by several instances (docs/scale-out.md); nil: `<data>/blobs`.
    /// Uploads then stream into `<shared>/.incoming/<instance>/`, on the same file system as the
    /// blobs, so the rename that makes one durable stays atomic. Default nil.
    public var sharedBlobDirectory: String?
    /// An S3-compatible bucket for the blobs instead of a directory (`s3://bucket/prefix`;
    /// docs/scale-out.md), reached with the AWS variables of `awsEnvironment`. Default nil.
    public var blobURL: String?
    /// Where the AWS variables are read: the process's environment unless a caller passes its own.
    public var awsEnvironment: [String: String] = ProcessInfo.processInfo.environment
    /// With `blobURL`: local copies of blobs read back from the bucket, at most this many bytes (copies
    /// in use may go over it). Default 1 GiB.
    public var blobCacheBytes: Int64 = 1 << 30
    public var limits = IngestLimits()
    /// Bundles older than this are deleted (blobs, files, occurrences, log lines); groups keep their
    /// counts. nil: keep forever. Default 30 days.
    public var retentionDays: Int? = 30
    /// How often the retention job runs. Default one hour.
    public var retentionInterval: Duration = .seconds(3600)
    /// How long an ingest request waits to share a database transaction with others (group commit).
    /// Default 2 ms.
    public var groupCommitWindow: Duration = .milliseconds(2)
    /// How long a web sign-in lasts. Default 12 hours.
    public var sessionLifetime: Duration = .seconds(12 * 3600)
    /// The collector's address as people reach it, for the links in alerts (behind a proxy:
    /// `https://crashes.example.com`). Default `http://<host>:<port>`.
    public var publicURL: String?
    /// Where webhooks may send: public addresses, plus the internal ranges allowed here
    /// (`--webhook-allow`, `BLACKBOX_COLLECTOR_WEBHOOK_ALLOW`). Default: none internal.
    public var webhookTargets = WebhookTargets()
    /// New-group alerts past 10 per webhook in this window are folded into one digest. Default a minute.
    public var alertDigestWindow: Duration = .seconds(60)
    /// How often the alert sender looks for retries that came due.
    public var alertPollInterval: Duration = .seconds(1)
    /// Where the log lines the collector ingests are forwarded over OTLP/HTTP (docs/otlp.md). Default
    /// nil: nowhere.
    public var logForwarding: OTLPForwarding?
    /// Log to stderr as well as to `<data>/diagnostics/logs`. Default true.
    public var logToConsole = true

    public init(dataDirectory: String) {
        self.dataDirectory = dataDirectory
    }

    public var databasePath: String { "\(dataDirectory)/collector.sqlite" }

    /// The store the configuration names: PostgreSQL when `databaseURL` is set, else SQLite.
    public func openStore() throws -> any CollectorStore {
        if let databaseURL { return try PostgresStore(url: databaseURL) }
        try FileManager.default.createDirectory(atPath: dataDirectory, withIntermediateDirectories: true)
        return try SQLiteStore(path: databasePath)
    }

    /// Where the data lives, for people: the database URL without its password, or the SQLite path.
    public var storeDescription: String {
        guard let databaseURL, var components = URLComponents(string: databaseURL) else { return databasePath }
        if components.password != nil { components.password = "***" }
        return components.string ?? "PostgreSQL"
    }
    /// llvm-symbolizer for symbolication on the collector; nil where none is installed.
    public var symbolizerPath: String? = SymbolizerProcess.locate()
    /// Symbolizers working at once (`SymbolicationService`'s lanes): a project whose debug files stall
    /// one holds that one only.
    public var symbolizerLanes = 2
    public var blobDirectory: String { sharedBlobDirectory ?? "\(dataDirectory)/blobs" }
    /// Symbol files, beside the bundles (and shared with them in scale-out).
    public var symbolDirectory: String { "\(blobDirectory)/symbols" }
    /// Per instance even in a shared blob directory: each instance clears its own at start.
    public var temporaryDirectory: String {
        guard let sharedBlobDirectory else { return "\(dataDirectory)/tmp" }
        return "\(sharedBlobDirectory)/.incoming/\(instanceName)"
    }
    /// The host name and a digest of the data directory: distinct for instances on one machine.
    public var instanceName: String {
        let digest = SHA256.hash(data: Data(dataDirectory.utf8)).lowercaseHex.prefix(12)
        return "\(ProcessInfo.processInfo.hostName)-\(digest)"
    }
    public var diagnosticsDirectory: String { "\(dataDirectory)/diagnostics" }
    /// With `blobURL`: the local copies of blobs; safe to delete at any time (cleared at start).
    public var cacheDirectory: String { "\(dataDirectory)/cache" }
}

/// Limits applied to every upload; anything beyond them is refused with a 4xx naming the limit.
public struct IngestLimits: Sendable {
    /// Open connections; past it the server stops accepting until one closes (they wait in the
    /// listen backlog). Default 4,096 (the collector raises its descriptor limit to fit).
    public var maxConnections = 4_096
    /// A connection that sends nothing for this long is closed: an idle keep-alive connection, one
    /// that never finishes its request head, or an upload whose body stalls. Default 30 s.
    public var idleTimeout: Duration = .seconds(30)
    /// An upload whose body is still arriving after this long is refused: 408 `upload_too_slow`
    /// (a client trickling bytes would otherwise hold a slot and disk space forever). Default 300 s.
    public var maxUploadDuration: Duration = .seconds(300)
    /// Uploads received at once; more are answered 503 `too_many_uploads` with `Retry-After`, which
    /// uploaders resend later. Default 64.
    public var maxConcurrentUploads = 64
    /// Of those, one project's: a project's key (public: it ships in every app) cannot take every
    /// slot. Default 16.
    public var maxConcurrentUploadsPerProject = 16
    /// Bytes of bundles one project may have stored (as sent); past it uploads are answered 413
    /// `quota_exceeded` until retention deletes its oldest. Default 50 GiB.
    public var maxBundleBytesPerProject: Int64 = 50 << 30
    /// Free space the blob directory's file system must keep: below it uploads are answered 503
    /// `insufficient_storage` (resend later) and `/ready` answers 503 `disk_low`. Default 512 MiB.
    public var minFreeBytes: Int64 = 512 << 20
    /// The request body (the zip as sent). Default 64 MiB; beyond it: 413 `body_too_large`.
    public var maxBodyBytes = 64 << 20
    /// Entries in one zip. Default 2,000.
    public var maxEntries = 2_000
    /// Bytes actually inflated from one entry. Default 256 MiB.
    public var maxEntryBytes = 256 << 20
    /// Bytes actually inflated from the whole zip. Default 512 MiB.
    public var maxTotalBytes = 512 << 20
    /// Inflated bytes per compressed byte, over the whole zip (checked once past 1 MiB inflated).
    /// Default 200; real logs compress 5–20×, bombs 1,000× and more.
    public var maxCompressionRatio = 200
    /// A crash report JSON. Default 8 MiB.
    public var maxReportBytes = 8 << 20
    /// The manifest and all crash reports of one bundle together, as inflated (they are held in
    /// memory to be decoded). Default 32 MiB; beyond it: 422 `reports_too_large`.
    public var maxReportBytesPerBundle = 32 << 20
    /// The same, for all uploads being inspected at once: past it an upload is answered 503
    /// `too_many_uploads` (resend later). Default 128 MiB, so that peak memory stays bounded however
    /// many uploads arrive together.
    public var maxReportBytesInFlight = 128 << 20
    /// One string of a report or manifest as indexed and shown (a function name, a reason, a host, a
    /// log line of the report's tail): longer ones are cut and marked `…[cut]`, the raw bundle keeps
    /// them whole. Default 8 KiB.
    public var maxFieldBytes = 8 << 10
    /// Lines of one log file put into the search index; the rest of the file stays downloadable.
    /// Default 100,000.
    public var maxIndexedLinesPerFile = 100_000
    /// Lines of one bundle put into the search index: logs past this budget (counted at ingest) are
    /// stored but not indexed. Default 500,000. Together with the per-file cap, this bounds the work
    /// and database growth one upload can cause (a 210 KB body once became 16.7 M index rows).
    public var maxIndexedLinesPerBundle = 500_000
    /// A symbol file (`PUT /api/v1/symbols/<build-id>`), as sent and as stored once inflated. Default
    /// 2 GiB (the debug info of a large Swift server is a few hundred MB).
    public var maxSymbolFileBytes = 2 << 30
    /// Symbol uploads received at once; more are answered 503 `too_many_uploads`. Default 4.
    public var maxConcurrentSymbolUploads = 4
    /// Of those, one project's. Default 2.
    public var maxConcurrentSymbolUploadsPerProject = 2
    /// A symbol upload whose body is still arriving after this long is refused (408). Default 1 h.
    public var maxSymbolUploadDuration: Duration = .seconds(3_600)
    /// A symbol upload slower than this on average, once `idleTimeout` has passed, is refused (408
    /// `upload_too_slow`): trickling a byte now and then would otherwise hold a slot for the hour.
    /// Default 16 KiB/s.
    public var minSymbolUploadBytesPerSecond = 16 << 10
    /// Symbol files one project may store, and their bytes (as stored); past either, uploads are
    /// answered 413 `quota_exceeded` until files are deleted. Defaults 10,000 and 20 GiB.
    public var maxSymbolFilesPerProject = 10_000
    public var maxSymbolBytesPerProject: Int64 = 20 << 30
    public init() {}
}
