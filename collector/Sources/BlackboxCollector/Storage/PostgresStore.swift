import BlackboxFormat
import Foundation
import Logging
import PostgresNIO

/// The scale-out store: PostgreSQL through postgres-nio, shared by any number of collector
/// instances. The same contract as `SQLiteStore` (the storage tests run against both), with
/// what several writers need:
/// - idempotent ingest under concurrency: unique constraints plus `ON CONFLICT DO NOTHING`, so two
///   instances receiving the same Upload-Id at once store it once and both answer with the record;
/// - log indexing claimed per file with `FOR UPDATE SKIP LOCKED` and a lease (`claimed_until`): any
///   number of indexers, no file indexed twice at once, a dead instance's claim expires;
/// - retention under an advisory lock (one instance at a time), dropping whole day partitions of
///   `log_lines` (docs/scale-out.md).
public final class PostgresStore: CollectorStore {
    let client: PostgresClient
    let logger = Logger(label: "collector.postgres")
    private let runner: Task<Void, Never>
    /// `host:port/database`, for error messages.
    private let target: String

    /// How long an indexer's claim on a log file lasts before another instance may take it over.
    static let claimSeconds = 300.0
    static let migrationLock: Int64 = 0x626C_6B62_6D69_6731  // "blkbmig1"
    static let retentionLock: Int64 = 0x626C_6B62_7265_7431  // "blkbret1"

    /// `postgres://user:password@host:port/database` (`?sslmode=require` for TLS).
    public init(url: String) throws {
        let configuration = try Self.configuration(url)
        target = URLComponents(string: url).map { "\($0.host ?? "")\($0.port.map { ":\($0)" } ?? "")\($0.path)" } ?? "?"
        client = PostgresClient(configuration: configuration, backgroundLogger: logger)
        let client = self.client
        runner = Task { await client.run() }
    }

    deinit { runner.cancel() }

    static func configuration(_ url: String) throws -> PostgresClient.Configuration {
        guard let components = URLComponents(string: url),
            components.scheme == "postgres" || components.scheme == "postgresql", let host = components.host,
            !host.isEmpty
        else {
            throw StorageError.invalidConfiguration(
                "the database URL must look like postgres://user:password@host:5432/database, got \(url.prefix(100))")
        }
        let database = String(components.path.drop(while: { $0 == "/" }))
        let sslMode = components.queryItems?.first { $0.name == "sslmode" }?.value ?? "disable"
        let tls: PostgresClient.Configuration.TLS =
            switch sslMode {
            case "require", "verify-full": .require(.makeClientConfiguration())
            case "prefer": .prefer(.makeClientConfiguration())
            default: .disable
            }
        return PostgresClient.Configuration(
            host: host, port: components.port ?? 5432, username: components.user ?? "postgres",
            password: components.password, database: database.isEmpty ? nil : database, tls: tls)
    }

    // MARK: Helpers

    private static func rows<T>(
        _ connection: PostgresConnection, _ query: PostgresQuery, logger: Logger,
        _ map: (PostgresRandomAccessRow) throws -> T
    ) async throws -> [T] {
        var result: [T] = []
        for try await row in try await connection.query(query, logger: logger) {
            result.append(try map(row.makeRandomAccess()))
        }
        return result
    }

    private func read<T: Sendable>(
        _ query: PostgresQuery, _ map: @escaping @Sendable (PostgresRandomAccessRow) throws -> T
    ) async throws -> [T] {
        let logger = self.logger
        return try await client.withConnection { try await Self.rows($0, query, logger: logger, map) }
    }

    private func transaction<T: Sendable>(_ body: (PostgresConnection, Logger) async throws -> T) async throws -> T {
        let logger = self.logger
        return try await client.withTransaction(logger: logger) { connection in try await body(connection, logger) }
    }

    /// Fails with a clear error when the server cannot be reached within `timeout`: postgres-nio
    /// itself would keep reconnecting while the query waits, forever.
    public func checkReachable(timeout: Duration = .seconds(10)) async throws {
        let reached = try await withThrowingTaskGroup(of: Bool.self) { group in
            group.addTask {
                try await self.ping()
                return true
            }
            group.addTask {
                try await Task.sleep(for: timeout)
                return false
            }
            defer { group.cancelAll() }
            return try await group.next() ?? false
        }
        guard reached else {
            throw StorageError.invalidConfiguration(
                "cannot reach PostgreSQL at \(target) within \(timeout) (is it running, and are the URL and credentials right?)"
            )
        }
    }

    public func migrate() async throws {
        try await checkReachable()
        try await transaction { connection, logger in
            try await connection.query("SELECT pg_advisory_xact_lock(\(Self.migrationLock))", logger: logger)
            try await connection.query(
                """
                CREATE TABLE IF NOT EXISTS schema_migrations (
                    version BIGINT PRIMARY KEY, applied_at DOUBLE PRECISION NOT NULL)
                """, logger: logger)
            let applied = Set(
                try await Self.rows(connection, "SELECT version FROM schema_migrations", logger: logger) {
                    try $0["version"].decode(Int64.self)
                })
            for (index, statements) in PostgresSchema.migrations.enumerated() where !applied.contains(Int64(index + 1))
            {
                for statement in statements {
                    try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger)
                }
                try await connection.query(
                    "INSERT INTO schema_migrations (version, applied_at) VALUES (\(Int64(index + 1)), \(Date().timeIntervalSince1970))",
                    logger: logger)
            }
        }
    }

    public func ping() async throws {
        _ = try await read("SELECT 1 AS one") { try $0["one"].decode(Int32.self) }
    }

    // MARK: Projects and keys

    public func createProject(name: String) async throws -> Project {
        let now = Date()
        let ids = try await read(
            "INSERT INTO projects (name, created_at) VALUES (\(name), \(now.timeIntervalSince1970)) RETURNING id"
        ) { try $0["id"].decode(Int64.self) }
        guard let id = ids.first else { throw StorageError.notFound("new project") }
        return Project(id: id, name: name, createdAt: now)
    }

    public func projects() async throws -> [Project] {
        try await read("SELECT id, name, created_at FROM projects ORDER BY id") {
            Project(
                id: try $0["id"].decode(Int64.self), name: try $0["name"].decode(String.self),
                createdAt: Date(timeIntervalSince1970: try $0["created_at"].decode(Double.self)))
        }
    }

    public func createKey(projectID: Int64, kind: APIKey.Kind, secret: String) async throws -> APIKey {
        let now = Date()
        let prefix = String(secret.prefix(8))
        let ids = try await read(
            """
            INSERT INTO api_keys (project_id, kind, secret_hash, prefix, created_at)
            VALUES (\(projectID), \(kind.rawValue), \(SQLiteStore.hash(secret)), \(prefix), \(now.timeIntervalSince1970))
            RETURNING id
            """
        ) { try $0["id"].decode(Int64.self) }
        guard let id = ids.first else { throw StorageError.notFound("new key") }
        return APIKey(id: id, projectID: projectID, kind: kind, prefix: prefix, createdAt: now, revokedAt: nil)
    }

    private static func key(_ row: PostgresRandomAccessRow) throws -> APIKey {
        APIKey(
            id: try row["id"].decode(Int64.self), projectID: try row["project_id"].decode(Int64.self),
            kind: APIKey.Kind(rawValue: try row["kind"].decode(String.self)) ?? .ingest,
            prefix: try row["prefix"].decode(String.self),
            createdAt: Date(timeIntervalSince1970: try row["created_at"].decode(Double.self)),
            revokedAt: try row["revoked_at"].decode(Double?.self).map(Date.init(timeIntervalSince1970:)))
    }

    public func keys() async throws -> [APIKey] {
        try await read("SELECT * FROM api_keys ORDER BY id", Self.key)
    }

    public func revokeKey(id: Int64) async throws -> Bool {
        let revoked = try await read(
            """
            UPDATE api_keys SET revoked_at = \(Date().timeIntervalSince1970)
            WHERE id = \(id) AND revoked_at IS NULL RETURNING id
            """
        ) { try $0["id"].decode(Int64.self) }
        return !revoked.isEmpty
    }

    public func authenticate(secret: String) async throws -> APIKey? {
        try await read(
            "SELECT * FROM api_keys WHERE secret_hash = \(SQLiteStore.hash(secret)) AND revoked_at IS NULL", Self.key
        ).first
    }

    public func createSession(tokenHash: String, keyID: Int64, kind: SessionKind, expiresAt: Date) async throws {
        let now = Date().timeIntervalSince1970
        try await transaction { connection, logger in
            try await connection.query("DELETE FROM sessions WHERE expires_at < \(now)", logger: logger)
            try await connection.query(
                """
                INSERT INTO sessions (token_hash, key_id, kind, created_at, expires_at)
                VALUES (\(tokenHash), \(keyID), \(kind.rawValue), \(now), \(expiresAt.timeIntervalSince1970))
                """, logger: logger)
        }
    }

    public func session(tokenHash: String, now: Date) async throws -> APIKey? {
        try await read(
            """
            SELECT k.* FROM sessions s JOIN api_keys k ON k.id = s.key_id
            WHERE s.token_hash = \(tokenHash) AND s.kind = 'session' AND s.expires_at > \(now.timeIntervalSince1970)
                AND k.revoked_at IS NULL
            """, Self.key
        ).first
    }

    /// One statement, so that two instances redeeming the same link at once cannot both succeed.
    public func redeemLink(tokenHash: String, now: Date) async throws -> APIKey? {
        try await read(
            """
            WITH link AS (
                DELETE FROM sessions WHERE token_hash = \(tokenHash) AND kind = 'link'
                RETURNING key_id, expires_at)
            SELECT k.* FROM link JOIN api_keys k ON k.id = link.key_id
            WHERE link.expires_at > \(now.timeIntervalSince1970) AND k.revoked_at IS NULL
            """, Self.key
        ).first
    }

    public func deleteSession(tokenHash: String) async throws {
        _ = try await read("DELETE FROM sessions WHERE token_hash = \(tokenHash) RETURNING key_id") {
            try $0["key_id"].decode(Int64.self)
        }
    }

    // MARK: Ingest

    private static func bundle(_ row: PostgresRandomAccessRow) throws -> BundleRecord {
        BundleRecord(
            id: try row["id"].decode(Int64.self), projectID: try row["project_id"].decode(Int64.self),
            uploadID: try row["upload_id"].decode(String?.self), sha256: try row["sha256"].decode(String.self),
            size: try row["size"].decode(Int64.self), blob: try row["blob"].decode(String.self),
            appName: try row["app_name"].decode(String?.self), appVersion: try row["app_version"].decode(String?.self),
            host: try row["host"].decode(String?.self), hasManifest: try row["has_manifest"].decode(Bool.self),
            receivedAt: Date(timeIntervalSince1970: try row["received_at"].decode(Double.self)),
            fileCount: Int(try row["file_count"].decode(Int64.self)),
            reportCount: Int(try row["report_count"].decode(Int64.self)))
    }

    public func existingBundle(projectID: Int64, uploadID: String?, sha256: String) async throws -> BundleRecord? {
        let logger = self.logger
        return try await client.withConnection { connection in
            try await Self.existing(
                connection, projectID: projectID, uploadID: uploadID, sha256: sha256, logger: logger)
        }
    }

    private static func existing(
        _ connection: PostgresConnection, projectID: Int64, uploadID: String?, sha256: String, logger: Logger
    ) async throws -> BundleRecord? {
        if let uploadID,
            let found = try await rows(
                connection, "SELECT * FROM bundles WHERE project_id = \(projectID) AND upload_id = \(uploadID)",
                logger: logger, bundle
            ).first
        {
            return found
        }
        return try await rows(
            connection, "SELECT * FROM bundles WHERE project_id = \(projectID) AND sha256 = \(sha256)", logger: logger,
            bundle
        ).first
    }

    public func index(_ bundles: [NewBundle]) async throws -> [IndexOutcome] {
        try await transaction { connection, logger in
            var outcomes: [IndexOutcome] = []
            for bundle in bundles { outcomes.append(try await Self.index(bundle, connection, logger)) }
            return outcomes
        }
    }

    private static func index(_ new: NewBundle, _ connection: PostgresConnection, _ logger: Logger) async throws
        -> IndexOutcome
    {
        if let existing = try await existing(
            connection, projectID: new.projectID, uploadID: new.uploadID, sha256: new.sha256, logger: logger)
        {
            return .duplicate(existing)
        }
        let firstReport = new.reports.first
        let appName = new.manifest?.app.name ?? firstReport?.app.name
        let appVersion = new.manifest?.app.version ?? firstReport?.app.version
        let host = new.manifest?.host ?? firstReport?.host.name
        // Another instance may be storing the same upload right now: the unique constraints make
        // this insert wait for it, and then do nothing.
        let inserted = try await rows(
            connection,
            """
            INSERT INTO bundles (project_id, upload_id, sha256, size, blob, app_name, app_version, host,
                has_manifest, received_at, file_count, report_count)
            VALUES (\(new.projectID), \(new.uploadID), \(new.sha256), \(new.size), \(new.blob), \(appName),
                \(appVersion), \(host), \(new.manifest != nil), \(new.receivedAt.timeIntervalSince1970),
                \(Int64(new.files.count)), \(Int64(new.reports.count)))
            ON CONFLICT DO NOTHING RETURNING *
            """, logger: logger, bundle)
        guard let record = inserted.first else {
            guard
                let existing = try await existing(
                    connection, projectID: new.projectID, uploadID: new.uploadID, sha256: new.sha256, logger: logger)
            else { throw StorageError.notFound("bundle \(new.sha256) after a conflict") }
            return .duplicate(existing)
        }
        let day = Self.day(new.receivedAt)
        for file in new.files {
            try await connection.query(
                """
                INSERT INTO bundle_files (bundle_id, path, kind, size, sha256, indexed, received_day)
                VALUES (\(record.id), \(file.path), \(file.kind.rawValue), \(file.size), \(file.sha256),
                    \(file.isIndexed), \(day)::date)
                """, logger: logger)
        }
        for report in new.reports {
            try await insert(report, bundleID: record.id, projectID: new.projectID, connection, logger)
        }
        return .stored(record)
    }

    /// One occurrence, and its group created or updated; a report id seen before is not counted twice.
    private static func insert(
        _ report: CrashReport, bundleID: Int64, projectID: Int64, _ connection: PostgresConnection, _ logger: Logger
    ) async throws {
        let signature = CrashSignature.compute(report)
        let occurred = report.process.crashTime.timeIntervalSince1970
        try await connection.query(
            """
            INSERT INTO crash_groups (project_id, signature, signature_version, signature_text, kind, title, count,
                first_seen, last_seen)
            VALUES (\(projectID), \(signature.hash), \(Int64(CrashSignature.version)), \(signature.text),
                \(report.kind.rawValue), \(signature.title), 0, \(occurred), \(occurred))
            ON CONFLICT (project_id, signature) DO NOTHING
            """, logger: logger)
        guard
            let groupID = try await rows(
                connection,
                "SELECT id FROM crash_groups WHERE project_id = \(projectID) AND signature = \(signature.hash)",
                logger: logger, { try $0["id"].decode(Int64.self) }
            ).first
        else { throw StorageError.notFound("group \(signature.hash)") }
        let json = try CrashReport.makeEncoder().encode(report)
        let reason = report.reason ?? report.fatalMessage
        guard
            let reportID = try await rows(
                connection,
                """
                INSERT INTO reports (project_id, bundle_id, group_id, report_uuid, kind, occurred_at, app_version, host,
                    reason, json)
                VALUES (\(projectID), \(bundleID), \(groupID), \(report.id.uuidString.lowercased()),
                    \(report.kind.rawValue), \(occurred), \(report.app.version), \(report.host.name), \(reason), \(json))
                ON CONFLICT (project_id, report_uuid) DO NOTHING RETURNING id
                """, logger: logger, { try $0["id"].decode(Int64.self) }
            ).first
        else { return }
        try await connection.query(
            """
            UPDATE crash_groups SET count = count + 1,
                first_seen = LEAST(first_seen, \(occurred)),
                latest_report_id = CASE WHEN \(occurred) >= last_seen OR latest_report_id IS NULL
                    THEN \(reportID) ELSE latest_report_id END,
                last_seen = GREATEST(last_seen, \(occurred))
            WHERE id = \(groupID)
            """, logger: logger)
        let version = report.app.version ?? "unknown"
        let host = report.host.name.isEmpty ? "unknown" : report.host.name
        let limit = Int64(CrashGroup.maxTrackedValues)
        let other = CrashGroup.otherValues
        // Past the limit of distinct values, a new one is counted under `other` (see CrashGroup).
        try await connection.query(
            """
            INSERT INTO group_versions (group_id, app_version, count)
            SELECT \(groupID), CASE WHEN EXISTS (
                    SELECT 1 FROM group_versions WHERE group_id = \(groupID) AND app_version = \(version))
                OR (SELECT count(*) FROM group_versions WHERE group_id = \(groupID)) < \(limit)
                THEN \(version) ELSE \(other) END, 1
            ON CONFLICT (group_id, app_version) DO UPDATE SET count = group_versions.count + 1
            """, logger: logger)
        try await connection.query(
            """
            INSERT INTO group_hosts (group_id, host, count)
            SELECT \(groupID), CASE WHEN EXISTS (
                    SELECT 1 FROM group_hosts WHERE group_id = \(groupID) AND host = \(host))
                OR (SELECT count(*) FROM group_hosts WHERE group_id = \(groupID)) < \(limit)
                THEN \(host) ELSE \(other) END, 1
            ON CONFLICT (group_id, host) DO UPDATE SET count = group_hosts.count + 1
            """, logger: logger)
    }

    // MARK: Read side

    private static func group(_ row: PostgresRandomAccessRow) throws -> CrashGroup {
        CrashGroup(
            id: try row["id"].decode(Int64.self), projectID: try row["project_id"].decode(Int64.self),
            signature: try row["signature"].decode(String.self),
            signatureVersion: Int(try row["signature_version"].decode(Int64.self)),
            kind: try row["kind"].decode(String.self), title: try row["title"].decode(String.self),
            count: Int(try row["count"].decode(Int64.self)),
            firstSeen: Date(timeIntervalSince1970: try row["first_seen"].decode(Double.self)),
            lastSeen: Date(timeIntervalSince1970: try row["last_seen"].decode(Double.self)),
            latestReportID: try row["latest_report_id"].decode(Int64?.self), versions: [:], hosts: [:])
    }

    /// Fills in versions and hosts.
    private func completed(_ groups: [CrashGroup]) async throws -> [CrashGroup] {
        guard !groups.isEmpty else { return [] }
        let ids = groups.map(\.id)
        let versions = try await read(
            "SELECT group_id, app_version, count FROM group_versions WHERE group_id = ANY(\(ids))"
        ) {
            (
                try $0["group_id"].decode(Int64.self), try $0["app_version"].decode(String.self),
                try $0["count"].decode(Int64.self)
            )
        }
        let hosts = try await read("SELECT group_id, host, count FROM group_hosts WHERE group_id = ANY(\(ids))") {
            (
                try $0["group_id"].decode(Int64.self), try $0["host"].decode(String.self),
                try $0["count"].decode(Int64.self)
            )
        }
        return groups.map { group in
            var group = group
            for (id, version, count) in versions where id == group.id { group.versions[version] = Int(count) }
            for (id, host, count) in hosts where id == group.id { group.hosts[host] = Int(count) }
            return group
        }
    }

    public func groups(projectID: Int64, page: Page) async throws -> [CrashGroup] {
        try await completed(
            read(
                """
                SELECT * FROM crash_groups WHERE project_id = \(projectID)
                ORDER BY last_seen DESC, id DESC LIMIT \(Int64(page.limit)) OFFSET \(Int64(page.offset))
                """, Self.group))
    }

    public func group(id: Int64) async throws -> CrashGroup? {
        try await completed(read("SELECT * FROM crash_groups WHERE id = \(id)", Self.group)).first
    }

    public func occurrences(groupID: Int64, page: Page) async throws -> [Occurrence] {
        try await read(
            """
            SELECT id, report_uuid, bundle_id, occurred_at, app_version, host, reason FROM reports
            WHERE group_id = \(groupID) ORDER BY occurred_at DESC, id DESC
            LIMIT \(Int64(page.limit)) OFFSET \(Int64(page.offset))
            """
        ) {
            Occurrence(
                reportID: try $0["id"].decode(Int64.self), reportUUID: try $0["report_uuid"].decode(String.self),
                bundleID: try $0["bundle_id"].decode(Int64.self),
                occurredAt: Date(timeIntervalSince1970: try $0["occurred_at"].decode(Double.self)),
                appVersion: try $0["app_version"].decode(String?.self), host: try $0["host"].decode(String?.self),
                reason: try $0["reason"].decode(String?.self))
        }
    }

    public func report(id: Int64) async throws -> StoredReport? {
        let found = try await read("SELECT id, bundle_id, group_id, json FROM reports WHERE id = \(id)") {
            (
                try $0["id"].decode(Int64.self), try $0["bundle_id"].decode(Int64.self),
                try $0["group_id"].decode(Int64.self), try $0["json"].decode(Data.self)
            )
        }
        guard let (id, bundleID, groupID, json) = found.first else { return nil }
        return StoredReport(id: id, bundleID: bundleID, groupID: groupID, report: try CrashReport.decode(json))
    }

    public func bundles(projectID: Int64, page: Page) async throws -> [BundleRecord] {
        try await read(
            """
            SELECT * FROM bundles WHERE project_id = \(projectID) ORDER BY received_at DESC, id DESC
            LIMIT \(Int64(page.limit)) OFFSET \(Int64(page.offset))
            """, Self.bundle)
    }

    public func bundle(id: Int64) async throws -> BundleRecord? {
        try await read("SELECT * FROM bundles WHERE id = \(id)", Self.bundle).first
    }

    private static func file(_ row: PostgresRandomAccessRow) throws -> BundleFile {
        BundleFile(
            id: try row["id"].decode(Int64.self), bundleID: try row["bundle_id"].decode(Int64.self),
            path: try row["path"].decode(String.self),
            kind: BundleFile.Kind(rawValue: try row["kind"].decode(String.self)) ?? .other,
            size: try row["size"].decode(Int64.self), sha256: try row["sha256"].decode(String.self))
    }

    public func files(bundleID: Int64) async throws -> [BundleFile] {
        try await read("SELECT * FROM bundle_files WHERE bundle_id = \(bundleID) ORDER BY path", Self.file)
    }

    public func file(id: Int64) async throws -> BundleFile? {
        try await read("SELECT * FROM bundle_files WHERE id = \(id)", Self.file).first
    }

    /// Every word must appear: `plainto_tsquery` ANDs the words and takes operators literally.
    public func searchLogs(projectID: Int64, query: String, page: Page) async throws -> [LogHit] {
        guard query.contains(where: { !$0.isWhitespace }) else { return [] }
        return try await read(
            """
            SELECT l.file_id, l.line_number, l.text, f.bundle_id, f.path
            FROM log_lines l JOIN bundle_files f ON f.id = l.file_id JOIN bundles b ON b.id = f.bundle_id
            WHERE l.tsv @@ plainto_tsquery('simple', \(query)) AND b.project_id = \(projectID)
            ORDER BY l.file_id DESC, l.line_number DESC LIMIT \(Int64(page.limit)) OFFSET \(Int64(page.offset))
            """
        ) {
            LogHit(
                fileID: try $0["file_id"].decode(Int64.self), bundleID: try $0["bundle_id"].decode(Int64.self),
                path: try $0["path"].decode(String.self), lineNumber: Int(try $0["line_number"].decode(Int32.self)),
                text: try $0["text"].decode(String.self))
        }
    }

    // MARK: Background work

    /// Claims the files it returns for `claimSeconds`: another instance asking at the same time gets
    /// other files (`SKIP LOCKED`), and a claim whose instance died expires.
    public func unindexedLogFiles(limit: Int) async throws -> [BundleFile] {
        let now = Date().timeIntervalSince1970
        return try await read(
            """
            UPDATE bundle_files SET claimed_until = \(now + Self.claimSeconds)
            WHERE id IN (
                SELECT id FROM bundle_files
                WHERE NOT indexed AND kind = 'log' AND (claimed_until IS NULL OR claimed_until < \(now))
                ORDER BY id LIMIT \(Int64(limit)) FOR UPDATE SKIP LOCKED)
            RETURNING *
            """, Self.file
        ).sorted { $0.id < $1.id }
    }

    public func storeLogLines(_ files: [LogFileLines]) async throws {
        try await transaction { connection, logger in
            for file in files {
                try await Self.storeLogLines(fileID: file.fileID, lines: file.lines, connection, logger)
            }
        }
    }

    private static func storeLogLines(
        fileID: Int64, lines: [String], _ connection: PostgresConnection, _ logger: Logger
    )
        async throws
    {
        // Locking the file's row orders this against retention deleting it: lines of a deleted
        // file are never stored.
        guard
            let day = try await Self.rows(
                connection, "SELECT received_day::text AS day FROM bundle_files WHERE id = \(fileID) FOR UPDATE",
                logger: logger, { try $0["day"].decode(String.self) }
            ).first
        else { return }
        try await Self.ensurePartition(day: day, connection, logger)
        // Idempotent: a second indexer or a restart redoes the whole file.
        try await connection.query(
            "DELETE FROM log_lines WHERE received_day = \(day)::date AND file_id = \(fileID)", logger: logger)
        // PostgreSQL text cannot hold NUL.
        let texts = lines.map { $0.contains("\u{0}") ? $0.replacingOccurrences(of: "\u{0}", with: "") : $0 }
        for start in stride(from: 0, to: texts.count, by: 5_000) {
            let chunk = Array(texts[start..<min(start + 5_000, texts.count)])
            let numbers = (start..<start + chunk.count).map { Int32($0 + 1) }
            try await connection.query(
                """
                INSERT INTO log_lines (received_day, file_id, line_number, text)
                SELECT \(day)::date, \(fileID), n, t FROM unnest(\(numbers)::int[], \(chunk)::text[]) AS u(n, t)
                """, logger: logger)
        }
        try await connection.query(
            "UPDATE bundle_files SET indexed = true, claimed_until = NULL WHERE id = \(fileID)", logger: logger)
    }

    /// `log_lines_pYYYYMMDD` for one day, created by whoever needs it first.
    private static func ensurePartition(day: String, _ connection: PostgresConnection, _ logger: Logger)
        async throws
    {
        guard let date = dayFormatter.date(from: day) else { throw StorageError.notFound("day \(day)") }
        let name = partitionName(day)
        try await connection.query("SELECT pg_advisory_xact_lock(hashtext(\(name)))", logger: logger)
        let next = Self.day(date.addingTimeInterval(86_400))
        // Both bounds come from our own date formatting, never from input.
        try await connection.query(
            PostgresQuery(
                unsafeSQL:
                    "CREATE TABLE IF NOT EXISTS \(name) PARTITION OF log_lines FOR VALUES FROM ('\(day)') TO ('\(next)')"
            ),
            logger: logger)
    }

    static func partitionName(_ day: String) -> String { "log_lines_p" + day.filter(\.isNumber) }

    static let dayFormatter: DateFormatter = {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyy-MM-dd"
        return formatter
    }()

    static func day(_ date: Date) -> String { dayFormatter.string(from: date) }

    /// One instance at a time (an advisory lock; the others skip this round). Days entirely before
    /// the cutoff are dropped as partitions; the cutoff's own day loses its expired files row by row.
    public func referencedBlobs(_ blobs: [String]) async throws -> Set<String> {
        try await transaction { connection, logger in try await Self.referencedBlobs(blobs, connection, logger) }
    }

    private static func referencedBlobs(_ blobs: [String], _ connection: PostgresConnection, _ logger: Logger)
        async throws -> Set<String>
    {
        guard !blobs.isEmpty else { return [] }
        return Set(
            try await rows(
                connection, "SELECT DISTINCT blob FROM bundles WHERE blob = ANY(\(blobs))", logger: logger,
                { try $0["blob"].decode(String.self) }))
    }

    public func deleteBundles(receivedBefore cutoff: Date) async throws -> RetentionOutcome {
        let cutoffDay = Self.day(cutoff)
        let outcome = try await transaction { connection, logger -> RetentionOutcome in
            let locked = try await Self.rows(
                connection, "SELECT pg_try_advisory_xact_lock(\(Self.retentionLock)) AS locked", logger: logger,
                { try $0["locked"].decode(Bool.self) })
            guard locked.first == true else { return RetentionOutcome(deletedBundles: 0, unreferencedBlobs: []) }
            let expired = try await Self.rows(
                connection, "SELECT id, blob FROM bundles WHERE received_at < \(cutoff.timeIntervalSince1970)",
                logger: logger, { (try $0["id"].decode(Int64.self), try $0["blob"].decode(String.self)) })
            let partitions = try await Self.rows(
                connection,
                """
                SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
                WHERE i.inhparent = 'log_lines'::regclass
                """, logger: logger, { try $0["name"].decode(String.self) })
            let cutoffName = Self.partitionName(cutoffDay)
            for name in partitions where name < cutoffName {
                try await connection.query(PostgresQuery(unsafeSQL: "DROP TABLE \(name)"), logger: logger)
            }
            guard !expired.isEmpty else { return RetentionOutcome(deletedBundles: 0, unreferencedBlobs: []) }
            let ids = expired.map(\.0)
            try await connection.query(
                """
                DELETE FROM log_lines WHERE received_day >= \(cutoffDay)::date
                    AND file_id IN (SELECT id FROM bundle_files WHERE bundle_id = ANY(\(ids)))
                """, logger: logger)
            try await connection.query("DELETE FROM reports WHERE bundle_id = ANY(\(ids))", logger: logger)
            try await connection.query("DELETE FROM bundle_files WHERE bundle_id = ANY(\(ids))", logger: logger)
            try await connection.query("DELETE FROM bundles WHERE id = ANY(\(ids))", logger: logger)
            try await connection.query(
                """
                UPDATE crash_groups SET latest_report_id =
                    (SELECT id FROM reports WHERE group_id = crash_groups.id ORDER BY occurred_at DESC LIMIT 1)
                WHERE latest_report_id IS NOT NULL AND latest_report_id NOT IN (SELECT id FROM reports)
                """, logger: logger)
            let candidates = Array(Set(expired.map(\.1))).sorted()
            let referenced = try await Self.referencedBlobs(candidates, connection, logger)
            return RetentionOutcome(
                deletedBundles: expired.count, unreferencedBlobs: candidates.filter { !referenced.contains($0) })
        }
        // Row deletes leave dead tuples: VACUUM makes their space reusable (outside a transaction).
        if outcome.deletedBundles > 0 {
            try await client.query("VACUUM (ANALYZE) bundles, bundle_files, reports, log_lines", logger: logger)
        }
        return outcome
    }
}
