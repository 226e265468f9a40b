import ArgumentParser
import Blackbox
import BlackboxCollector
import BlackboxFormat
import BlackboxServiceLifecycle
import Foundation
import Logging
import ServiceLifecycle

@main
struct CollectorCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "blackbox-collector",
        abstract: "Receives Blackbox bundles, groups crashes, serves a web UI and a JSON API.",
        version: BlackboxVersion.current,
        subcommands: [Serve.self, Migrate.self, Projects.self, Keys.self, LoginLink.self],
        defaultSubcommand: Serve.self)
}

/// Options every command shares. Flags win over the environment.
struct StorageOptions: ParsableArguments {
    @Option(help: "Data directory (env BLACKBOX_COLLECTOR_DATA; default ./collector-data).")
    var dataDir: String?

    var dataDirectory: String {
        let chosen = dataDir ?? ProcessInfo.processInfo.environment["BLACKBOX_COLLECTOR_DATA"] ?? "collector-data"
        return URL(fileURLWithPath: chosen).standardizedFileURL.path
    }

    @Option(
        help:
            "PostgreSQL URL, postgres://user:password@host:5432/database (env BLACKBOX_COLLECTOR_DATABASE_URL; default: SQLite in the data directory)."
    )
    var databaseURL: String?
    @Option(
        help:
            "Blob directory shared by all instances (env BLACKBOX_COLLECTOR_BLOB_DIR; default <data-dir>/blobs). See docs/scale-out.md."
    )
    var blobDir: String?
    @Option(
        help:
            "An S3-compatible bucket for the blobs, s3://bucket/prefix, reached with the AWS variables (AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION…; env BLACKBOX_COLLECTOR_BLOB_URL). See docs/scale-out.md."
    )
    var blobURL: String?

    var configuration: CollectorConfiguration {
        var configuration = CollectorConfiguration(dataDirectory: dataDirectory)
        configuration.databaseURL =
            databaseURL ?? ProcessInfo.processInfo.environment["BLACKBOX_COLLECTOR_DATABASE_URL"]
        configuration.sharedBlobDirectory =
            (blobDir ?? ProcessInfo.processInfo.environment["BLACKBOX_COLLECTOR_BLOB_DIR"])
            .map { URL(fileURLWithPath: $0).standardizedFileURL.path }
        configuration.blobURL = blobURL ?? ProcessInfo.processInfo.environment["BLACKBOX_COLLECTOR_BLOB_URL"]
        return configuration
    }

    func openStore() throws -> any CollectorStore { try configuration.openStore() }
}

func environment(_ name: String) -> String? { ProcessInfo.processInfo.environment[name] }

struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Run the collector (the default command).")
    @OptionGroup var storage: StorageOptions
    @Option(help: "Address to listen on (env BLACKBOX_COLLECTOR_HOST; default 127.0.0.1).") var host: String?
    @Option(help: "Port; 0 picks a free one (env BLACKBOX_COLLECTOR_PORT; default 8080).") var port: Int?
    @Option(help: "Largest accepted upload in bytes (env BLACKBOX_COLLECTOR_MAX_BODY; default 64 MiB).")
    var maxBodyBytes: Int?
    @Option(
        name: .customLong("limit"),
        help:
            "A limit, name=value (sizes with K/M/G, durations in seconds); repeatable (env BLACKBOX_COLLECTOR_LIMITS, comma-separated). Names and defaults: docs/collector.md."
    )
    var limits: [String] = []
    @Option(
        help:
            "Delete bundles older than this many days; 0 keeps them (env BLACKBOX_COLLECTOR_RETENTION_DAYS; default 30)."
    )
    var retentionDays: Int?
    @Option(
        help:
            "The collector's address as people reach it, for links in alerts, e.g. https://crashes.example.com (env BLACKBOX_COLLECTOR_PUBLIC_URL; default http://<host>:<port>)."
    )
    var publicURL: String?
    @Option(
        help:
            "Internal address ranges webhooks may reach, CIDR[,CIDR…] (env BLACKBOX_COLLECTOR_WEBHOOK_ALLOW; default none: loopback, private, link-local and reserved addresses are refused)."
    )
    var webhookAllow: String?
    @Option(
        help:
            "llvm-symbolizer processes working at once; a project whose debug files stall one holds that one only (env BLACKBOX_COLLECTOR_SYMBOLIZER_LANES; default 2)."
    )
    var symbolizerLanes: Int?
    @Option(
        help:
            "Forward the log lines of bundles and Sentry logs over OTLP/HTTP to this URL, e.g. http://loki:3100/otlp/v1/logs (env BLACKBOX_COLLECTOR_FORWARD_LOGS_URL; default: nowhere). See docs/otlp.md."
    )
    var forwardLogs: String?
    @Option(
        help:
            "A header of the forwarded requests, name=value; repeatable (env BLACKBOX_COLLECTOR_FORWARD_LOGS_HEADERS, name=value,name=value as OTEL_EXPORTER_OTLP_HEADERS)."
    )
    var forwardLogsHeader: [String] = []
    @Flag(help: "Do not log to stderr (the log files are still written).") var quiet = false

    func run() async throws {
        umask(0o077)  // logs, database and blobs hold personal data (see CollectorServer.init)
        var configuration = storage.configuration
        configuration.host = host ?? environment("BLACKBOX_COLLECTOR_HOST") ?? "127.0.0.1"
        configuration.port = port ?? environment("BLACKBOX_COLLECTOR_PORT").flatMap(Int.init) ?? 8080
        if let limit = maxBodyBytes ?? environment("BLACKBOX_COLLECTOR_MAX_BODY").flatMap(Int.init) {
            configuration.limits.maxBodyBytes = limit
        }
        do {
            if let settings = environment("BLACKBOX_COLLECTOR_LIMITS") { try configuration.limits.set(settings) }
            for setting in limits { try configuration.limits.set(setting) }
        } catch {
            throw ValidationError(error.description)
        }
        if let lanes = symbolizerLanes ?? environment("BLACKBOX_COLLECTOR_SYMBOLIZER_LANES").flatMap(Int.init) {
            guard (1...64).contains(lanes) else { throw ValidationError("--symbolizer-lanes: 1 to 64") }
            configuration.symbolizerLanes = lanes
        }
        if let allowed = webhookAllow ?? environment("BLACKBOX_COLLECTOR_WEBHOOK_ALLOW") {
            do {
                configuration.webhookTargets = try WebhookTargets(allowing: allowed)
            } catch {
                throw ValidationError("--webhook-allow: \(error)")
            }
        }
        let days = retentionDays ?? environment("BLACKBOX_COLLECTOR_RETENTION_DAYS").flatMap(Int.init) ?? 30
        configuration.retentionDays = days > 0 ? days : nil
        if let url = publicURL ?? environment("BLACKBOX_COLLECTOR_PUBLIC_URL") {
            guard let components = URLComponents(string: url),
                components.scheme == "http" || components.scheme == "https",
                components.host?.isEmpty == false
            else { throw ValidationError("--public-url must be an http or https URL, got \(url.prefix(100))") }
            configuration.publicURL = url.hasSuffix("/") ? String(url.dropLast()) : url
        }

        if let url = forwardLogs ?? environment("BLACKBOX_COLLECTOR_FORWARD_LOGS_URL") {
            do {
                let headers =
                    try OTLPForwarding.headers(environment("BLACKBOX_COLLECTOR_FORWARD_LOGS_HEADERS") ?? "")
                    + forwardLogsHeader.flatMap { try OTLPForwarding.headers($0) }
                configuration.logForwarding = try OTLPForwarding(endpoint: url, headers: headers)
            } catch {
                throw ValidationError("--forward-logs: \(error)")
            }
        }

        // The collector's own logs go through Blackbox (and so does its crash capture).
        try FileManager.default.createDirectory(
            atPath: configuration.diagnosticsDirectory, withIntermediateDirectories: true)
        var logging = BlackboxConfiguration(
            appName: "blackbox-collector", directory: configuration.diagnosticsDirectory)
        // Text on stderr beside the file, or, under systemd (JOURNAL_STREAM), the journal's native
        // protocol, as Blackbox's defaults choose.
        logging.sinks = quiet ? Sinks.file : logging.sinks.contains(.journald) ? logging.sinks : [.console, .file]
        let blackbox = try Blackbox.start(logging)

        let server = try CollectorServer(configuration: configuration)
        let bootstrap = try await Bootstrap.ensureFirstProject(
            store: server.store, dataDirectory: configuration.dataDirectory)
        let credentials = bootstrap.credentials
        let example = "\(configuration.dataDirectory)/example-bundle.zip"
        if !FileManager.default.fileExists(atPath: example) { try? ExampleBundle.write(to: example) }
        let host = configuration.host
        let dataDirectory = configuration.dataDirectory
        let storeDescription = configuration.storeDescription
        let publicURL = configuration.publicURL
        let signInLink = try await credentials.asyncMap { try await server.loginLink(adminToken: $0.adminToken) }
        let app = try await server.makeApplication { port in
            let base = "http://\(host):\(port)"
            var lines = [
                "Blackbox collector listening on \(base)", "  data:         \(dataDirectory)",
                "  database:     \(storeDescription)",
            ]
            if credentials != nil {
                lines.append(
                    "  web UI:       \(base)\(signInLink ?? "/login") (a one-time sign-in link, valid for an hour)")
            }
            if credentials != nil, !bootstrap.created {
                lines.append(
                    "  keys:         printed at the first start only; in \(bootstrap.path) (delete it in production)")
            }
            if let credentials, bootstrap.created {
                let dsn = credentials.withSentryDSN(publicURL: publicURL ?? base, savedAt: bootstrap.path).sentryDSN
                lines += [
                    "  ingest key:   \(credentials.ingestKey)",
                    "  admin token:  \(credentials.adminToken)",
                    "  Sentry DSN:   \(dsn ?? "-") (for any Sentry SDK)",
                    "  upload a bundle:",
                    "    curl -sS -H 'Authorization: Bearer \(credentials.ingestKey)' -H \"Upload-Id: $(cat /proc/sys/kernel/random/uuid)\" \\",
                    "         -H 'Content-Type: application/zip' --data-binary @\(example) \(base)/api/v1/bundles",
                    "  read the API:",
                    "    curl -sS -H 'Authorization: Bearer \(credentials.adminToken)' \(base)/api/v1/groups",
                ]
            }
            FileHandle.standardOutput.write(Data((lines.joined(separator: "\n") + "\n").utf8))
        }
        // Hummingbird's runService, with bounds: a service that does not finish within 30 s of SIGTERM
        // is cancelled, and one that ignores cancellation for 10 s more ends the process (a crash
        // report names it) instead of keeping a supervisor's restart waiting forever.
        // Blackbox first: the group stops services in reverse order, so it stops last and the others'
        // shutdown is logged.
        var group = ServiceGroupConfiguration(
            services: [blackbox, app], gracefulShutdownSignals: [.sigterm, .sigint],
            logger: Logger(label: "collector.services"))
        group.maximumGracefulShutdownDuration = .seconds(30)
        group.maximumCancellationDuration = .seconds(10)
        try await ServiceGroup(configuration: group).run()
    }
}

struct LoginLink: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print a one-time web sign-in link for a project (valid for an hour, used once).")
    @OptionGroup var storage: StorageOptions
    @Option(help: "Project id (see `projects list`); default the first one.") var project: Int64?
    @Option(help: "The collector's address, to print a whole URL.") var baseURL = "http://127.0.0.1:8080"
    func run() async throws {
        let store = try storage.openStore()
        try await store.migrate()
        let firstProject = try await store.projects().first?.id
        guard let projectID = project ?? firstProject,
            let path = try await CollectorServer.loginLink(store: store, projectID: projectID)
        else { throw ValidationError("no active admin token for that project; see `keys list`") }
        print(baseURL + path)
    }
}

extension Optional {
    func asyncMap<T>(_ transform: (Wrapped) async throws -> T?) async rethrows -> T? {
        guard let value = self else { return nil }
        return try await transform(value)
    }
}

struct Migrate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Create or upgrade the database schema, then exit.")
    @OptionGroup var storage: StorageOptions
    func run() async throws {
        try await storage.openStore().migrate()
        print("database at \(storage.configuration.storeDescription) is up to date")
    }
}

struct Projects: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Create and list projects.", subcommands: [Create.self, List.self])

    struct Create: AsyncParsableCommand {
        @OptionGroup var storage: StorageOptions
        @Argument(help: "The project's name.") var name: String
        func run() async throws {
            let store = try storage.openStore()
            try await store.migrate()
            let project = try await store.createProject(name: name)
            print(
                "project \(project.id) \(project.name) created; give it keys with `keys create --project \(project.id)`"
            )
        }
    }

    struct List: AsyncParsableCommand {
        @OptionGroup var storage: StorageOptions
        func run() async throws {
            let store = try storage.openStore()
            try await store.migrate()
            for project in try await store.projects() { print("\(project.id)\t\(project.name)") }
        }
    }
}

struct Keys: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Create, list and revoke ingest keys and admin tokens.",
        subcommands: [Create.self, List.self, Revoke.self])

    struct Create: AsyncParsableCommand {
        @OptionGroup var storage: StorageOptions
        @Option(help: "Project id (see `projects list`).") var project: Int64
        @Option(
            help: "ingest (upload bundles only), admin (read everything) or symbols (upload and fetch symbols only).")
        var kind: String = "ingest"
        @Option(help: "The collector's address as SDKs reach it, for the Sentry DSN of an ingest key.")
        var publicURL = "http://127.0.0.1:8080"
        func run() async throws {
            guard let kind = APIKey.Kind(rawValue: kind) else {
                throw ValidationError("--kind must be ingest, admin or symbols, got \(self.kind)")
            }
            let store = try storage.openStore()
            try await store.migrate()
            guard try await store.projects().contains(where: { $0.id == project }) else {
                throw ValidationError("there is no project \(project); see `projects list`")
            }
            let secret = Bootstrap.newSecret("bbx_\(kind.rawValue)_")
            let key = try await store.createKey(projectID: project, kind: kind, secret: secret)
            print("key \(key.id) (\(kind.rawValue)) for project \(project): \(secret)")
            if kind == .ingest {
                print(
                    "Sentry DSN: \(SentryAuthentication.dsn(publicURL: publicURL, ingestKey: secret, projectID: project))"
                )
            }
            print("this is the only time the secret is shown")
        }
    }

    struct List: AsyncParsableCommand {
        @OptionGroup var storage: StorageOptions
        func run() async throws {
            let store = try storage.openStore()
            try await store.migrate()
            for key in try await store.keys() {
                let state = key.revokedAt.map { "revoked \($0.formatted(.iso8601))" } ?? "active"
                print("\(key.id)\tproject \(key.projectID)\t\(key.kind.rawValue)\t\(key.prefix)…\t\(state)")
            }
        }
    }

    struct Revoke: AsyncParsableCommand {
        @OptionGroup var storage: StorageOptions
        @Argument(help: "Key id (see `keys list`).") var id: Int64
        func run() async throws {
            let store = try storage.openStore()
            try await store.migrate()
            guard try await store.revokeKey(id: id) else {
                throw ValidationError("no active key \(id); see `keys list`")
            }
            print("key \(id) revoked")
        }
    }
}
