import BlackboxFormat
import Crypto
import Foundation
import GRDB

/// The embedded store: one SQLite database (WAL, `synchronous = FULL`, so a commit is durable when it
/// returns) through GRDB. Log lines live in an FTS5 table whose rowid is `fileID << 24 | line`, so a
/// file's lines are one rowid range (fast deletes; at most 16 M lines per file are searchable).
public final class SQLiteStore: CollectorStore {
    let pool: DatabasePool
    /// A read-only connection of its own for the lookup every upload makes, used synchronously (see
    /// `existingBundle`).
    private let uploadLookup: DatabaseQueue

    public init(path: String) throws {
        var configuration = Configuration()
        configuration.prepareDatabase { db in
            // auto_vacuum must be chosen before the first table exists (later it is a no-op);
            // INCREMENTAL lets retention give freed pages back without a full VACUUM.
            if !db.configuration.readonly { try db.execute(sql: "PRAGMA auto_vacuum = INCREMENTAL") }
            try db.execute(sql: "PRAGMA synchronous = FULL")
            try db.execute(sql: "PRAGMA foreign_keys = ON")
        }
        configuration.busyMode = .timeout(10)
        pool = try DatabasePool(path: path, configuration: configuration)
        // Made private also when an earlier version created them readable by everyone.
        for file in [path, path + "-wal", path + "-shm"] { chmod(file, 0o600) }
        var lookupConfiguration = Configuration()
        lookupConfiguration.readonly = true
        lookupConfiguration.busyMode = .timeout(10)
        uploadLookup = try DatabaseQueue(path: path, configuration: lookupConfiguration)
    }

    static let lineBits: Int64 = 24

    public func migrate() async throws {
        try SQLiteSchema.migrator.migrate(pool)
    }

    public func ping() async throws {
        _ = try await pool.read { db in try Int.fetchOne(db, sql: "SELECT 1") }
    }

    // MARK: Projects and keys

    public func createProject(name: String) async throws -> Project {
        try await pool.write { db in
            let now = Date()
            try db.execute(
                sql: "INSERT INTO projects (name, created_at) VALUES (?, ?)",
                arguments: [name, now.timeIntervalSince1970])
            return Project(id: db.lastInsertedRowID, name: name, createdAt: now)
        }
    }

    public func projects() async throws -> [Project] {
        try await pool.read { db in
            try Row.fetchAll(db, sql: "SELECT id, name, created_at FROM projects ORDER BY id").map {
                Project(id: $0["id"], name: $0["name"], createdAt: Date(timeIntervalSince1970: $0["created_at"]))
            }
        }
    }

    static func hash(_ secret: String) -> String {
        SHA256.hash(data: Data(secret.utf8)).lowercaseHex
    }

    public func createKey(projectID: Int64, kind: APIKey.Kind, secret: String) async throws -> APIKey {
        try await pool.write { db in
            let now = Date()
            let prefix = String(secret.prefix(8))
            try db.execute(
                sql: "INSERT INTO api_keys (project_id, kind, secret_hash, prefix, created_at) VALUES (?, ?, ?, ?, ?)",
                arguments: [projectID, kind.rawValue, Self.hash(secret), prefix, now.timeIntervalSince1970])
            return APIKey(
                id: db.lastInsertedRowID, projectID: projectID, kind: kind, prefix: prefix, createdAt: now,
                revokedAt: nil)
        }
    }

    private static func key(_ row: Row) -> APIKey {
        APIKey(
            id: row["id"], projectID: row["project_id"], kind: APIKey.Kind(rawValue: row["kind"]) ?? .ingest,
            prefix: row["prefix"], createdAt: Date(timeIntervalSince1970: row["created_at"]),
            revokedAt: (row["revoked_at"] as Double?).map(Date.init(timeIntervalSince1970:)))
    }

    public func keys() async throws -> [APIKey] {
        try await pool.read { db in try Row.fetchAll(db, sql: "SELECT * FROM api_keys ORDER BY id").map(Self.key) }
    }

    public func revokeKey(id: Int64) async throws -> Bool {
        try await pool.write { db in
            try db.execute(
                sql: "UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL",
                arguments: [Date().timeIntervalSince1970, id])
            return db.changesCount > 0
        }
    }

    public func authenticate(secret: String) async throws -> APIKey? {
        try await pool.read { db in
            try db.cachedRow(
                sql: "SELECT * FROM api_keys WHERE secret_hash = ? AND revoked_at IS NULL",
                arguments: [Self.hash(secret)]
            ).map(Self.key)
        }
    }

    public func createSession(tokenHash: String, keyID: Int64, kind: SessionKind, expiresAt: Date) async throws {
        let now = Date().timeIntervalSince1970
        try await pool.write { db in
            try db.execute(sql: "DELETE FROM sessions WHERE expires_at < ?", arguments: [now])
            try db.execute(
                sql: "INSERT INTO sessions (token_hash, key_id, kind, created_at, expires_at) VALUES (?, ?, ?, ?, ?)",
                arguments: [tokenHash, keyID, kind.rawValue, now, expiresAt.timeIntervalSince1970])
        }
    }

    public func session(tokenHash: String, now: Date) async throws -> APIKey? {
        try await pool.read { db in
            try db.cachedRow(
                sql: """
                    SELECT k.* FROM sessions s JOIN api_keys k ON k.id = s.key_id
                    WHERE s.token_hash = ? AND s.kind = 'session' AND s.expires_at > ? AND k.revoked_at IS NULL
                    """,
                arguments: [tokenHash, now.timeIntervalSince1970]
            ).map(Self.key)
        }
    }

    public func redeemLink(tokenHash: String, now: Date) async throws -> APIKey? {
        try await pool.write { db in
            let key = try Row.fetchOne(
                db,
                sql: """
                    SELECT k.* FROM sessions s JOIN api_keys k ON k.id = s.key_id
                    WHERE s.token_hash = ? AND s.kind = 'link' AND s.expires_at > ? AND k.revoked_at IS NULL
                    """,
                arguments: [tokenHash, now.timeIntervalSince1970]
            ).map(Self.key)
            try db.execute(sql: "DELETE FROM sessions WHERE token_hash = ? AND kind = 'link'", arguments: [tokenHash])
            return key
        }
    }

    public func deleteSession(tokenHash: String) async throws {
        try await pool.write { db in
            try db.execute(sql: "DELETE FROM sessions WHERE token_hash = ?", arguments: [tokenHash])
        }
    }

    // MARK: Ingest

    private static func bundle(_ row: Row) -> BundleRecord {
        BundleRecord(
            id: row["id"], projectID: row["project_id"], uploadID: row["upload_id"], sha256: row["sha256"],
            size: row["size"], blob: row["blob"], appName: row["app_name"], appVersion: row["app_version"],
            host: row["host"], hasManifest: row["has_manifest"],
            receivedAt: Date(timeIntervalSince1970: row["received_at"]),
            fileCount: row["file_count"], reportCount: row["report_count"])
    }

    public func existingBundle(projectID: Int64, uploadID: String?, sha256: String) async throws -> BundleRecord? {
        try existingBundleOnThisThread(projectID: projectID, uploadID: uploadID, sha256: sha256)
    }

    /// Synchronous on purpose: every upload asks, and an async read costs two thread hops, more than
    /// the indexed lookup itself (profiled: about a fifth of the 10 KB upload rate). It runs on the
    /// calling thread through a connection nothing else uses, so the wait is at most another
    /// lookup. Never through the pool's readers: those are also held by async reads, and two
    /// cooperative threads blocked waiting for one deadlocked the server under load.
    private func existingBundleOnThisThread(projectID: Int64, uploadID: String?, sha256: String) throws
        -> BundleRecord?
    {
        try uploadLookup.read { db in try Self.existing(db, projectID: projectID, uploadID: uploadID, sha256: sha256) }
    }

    private static func existing(_ db: Database, projectID: Int64, uploadID: String?, sha256: String) throws
        -> BundleRecord?
    {
        if let uploadID,
            let row = try db.cachedRow(
                sql: "SELECT * FROM bundles WHERE project_id = ? AND upload_id = ?",
                arguments: [projectID, uploadID])
        {
            return bundle(row)
        }
        return try db.cachedRow(
            sql: "SELECT * FROM bundles WHERE project_id = ? AND sha256 = ?", arguments: [projectID, sha256]
        ).map(bundle)
    }

    public func index(_ bundles: [NewBundle]) async throws -> [IndexOutcome] {
        try await pool.write { db in
            try bundles.map { try Self.index($0, in: db) }
        }
    }

    private static func index(_ new: NewBundle, in db: Database) throws -> IndexOutcome {
        if let existing = try existing(db, projectID: new.projectID, uploadID: new.uploadID, sha256: new.sha256) {
            return .duplicate(existing)
        }
        let received = new.receivedAt.timeIntervalSince1970
        let firstReport = new.reports.first
        try db.executeCached(
            sql: """
                INSERT INTO bundles (project_id, upload_id, sha256, size, blob, app_name, app_version, host,
                    has_manifest, received_at, file_count, report_count)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """,
            arguments: [
                new.projectID, new.uploadID, new.sha256, new.size, new.blob,
                new.manifest?.app.name ?? firstReport?.app.name, new.manifest?.app.version ?? firstReport?.app.version,
                new.manifest?.host ?? firstReport?.host.name, new.manifest != nil, received, new.files.count,
                new.reports.count,
            ])
        let bundleID = db.lastInsertedRowID
        for file in new.files {
            try db.executeCached(
                sql:
                    "INSERT INTO bundle_files (bundle_id, path, kind, size, sha256, indexed) VALUES (?, ?, ?, ?, ?, ?)",
                arguments: [bundleID, file.path, file.kind.rawValue, file.size, file.sha256, file.isIndexed ? 1 : 0])
        }
        for report in new.reports {
            try insert(report, bundleID: bundleID, projectID: new.projectID, in: db)
        }
        guard let row = try db.cachedRow(sql: "SELECT * FROM bundles WHERE id = ?", arguments: [bundleID]) else {
            throw StorageError.notFound("bundle \(bundleID)")
        }
        return .stored(bundle(row))
    }

    /// One occurrence, and its group created or updated. A report id seen before (the same report in
    /// another bundle) is not counted twice.
    private static func insert(_ report: CrashReport, bundleID: Int64, projectID: Int64, in db: Database) throws {
        let uuid = report.id.uuidString.lowercased()
        if try db.cachedValue(
            Bool.self, sql: "SELECT 1 FROM reports WHERE project_id = ? AND report_uuid = ?",
            arguments: [projectID, uuid])
            == true
        {
            return
        }
        let signature = CrashSignature.compute(report)
        let occurred = report.process.crashTime.timeIntervalSince1970
        try db.executeCached(
            sql: """
                INSERT INTO crash_groups (project_id, signature, signature_version, signature_text, kind, title, count,
                    first_seen, last_seen)
                VALUES (?, ?, ?, ?, ?, ?, 0, ?, ?)
                ON CONFLICT (project_id, signature) DO NOTHING
                """,
            arguments: [
                projectID, signature.hash, CrashSignature.version, signature.text, report.kind.rawValue,
                signature.title, occurred, occurred,
            ])
        guard
            let groupID = try db.cachedValue(
                Int64.self, sql: "SELECT id FROM crash_groups WHERE project_id = ? AND signature = ?",
                arguments: [projectID, signature.hash])
        else { throw StorageError.notFound("group \(signature.hash)") }
        let json = try CrashReport.makeEncoder().encode(report)
        try db.executeCached(
            sql: """
                INSERT INTO reports (project_id, bundle_id, group_id, report_uuid, kind, occurred_at, app_version, host,
                    reason, json)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """,
            arguments: [
                projectID, bundleID, groupID, uuid, report.kind.rawValue, occurred, report.app.version,
                report.host.name, report.reason ?? report.fatalMessage, json,
            ])
        let reportID = db.lastInsertedRowID
        try db.executeCached(
            sql: """
                UPDATE crash_groups SET count = count + 1,
                    first_seen = min(first_seen, ?),
                    latest_report_id = CASE WHEN ? >= last_seen OR latest_report_id IS NULL THEN ? ELSE latest_report_id END,
                    last_seen = max(last_seen, ?)
                WHERE id = ?
                """,
            arguments: [occurred, occurred, reportID, occurred, groupID])
        // Past the limit of distinct values, a new one is counted under `other` (see CrashGroup).
        let version = report.app.version ?? "unknown"
        let host = report.host.name.isEmpty ? "unknown" : report.host.name
        let limit = CrashGroup.maxTrackedValues
        try db.executeCached(
            sql: """
                INSERT INTO group_versions (group_id, app_version, count)
                SELECT ?, CASE WHEN EXISTS (SELECT 1 FROM group_versions WHERE group_id = ? AND app_version = ?)
                    OR (SELECT count(*) FROM group_versions WHERE group_id = ?) < ? THEN ? ELSE ? END, 1
                WHERE true
                ON CONFLICT (group_id, app_version) DO UPDATE SET count = count + 1
                """,
            arguments: [groupID, groupID, version, groupID, limit, version, CrashGroup.otherValues])
        try db.executeCached(
            sql: """
                INSERT INTO group_hosts (group_id, host, count)
                SELECT ?, CASE WHEN EXISTS (SELECT 1 FROM group_hosts WHERE group_id = ? AND host = ?)
                    OR (SELECT count(*) FROM group_hosts WHERE group_id = ?) < ? THEN ? ELSE ? END, 1
                WHERE true
                ON CONFLICT (group_id, host) DO UPDATE SET count = count + 1
                """,
            arguments: [groupID, groupID, host, groupID, limit, host, CrashGroup.otherValues])
    }

    // MARK: Read side

    private static func group(_ row: Row, in db: Database) throws -> CrashGroup {
        let id: Int64 = row["id"]
        var versions: [String: Int] = [:]
        for version in try Row.fetchAll(
            db, sql: "SELECT app_version, count FROM group_versions WHERE group_id = ?", arguments: [id])
        {
            versions[version["app_version"]] = version["count"]
        }
        var hosts: [String: Int] = [:]
        for host in try Row.fetchAll(db, sql: "SELECT host, count FROM group_hosts WHERE group_id = ?", arguments: [id])
        {
            hosts[host["host"]] = host["count"]
        }
        return CrashGroup(
            id: id, projectID: row["project_id"], signature: row["signature"],
            signatureVersion: row["signature_version"],
            kind: row["kind"], title: row["title"], count: row["count"],
            firstSeen: Date(timeIntervalSince1970: row["first_seen"]),
            lastSeen: Date(timeIntervalSince1970: row["last_seen"]),
            latestReportID: row["latest_report_id"], versions: versions, hosts: hosts)
    }

    public func groups(projectID: Int64, page: Page) async throws -> [CrashGroup] {
        try await pool.read { db in
            try Row.fetchAll(
                db,
                sql:
                    "SELECT * FROM crash_groups WHERE project_id = ? ORDER BY last_seen DESC, id DESC LIMIT ? OFFSET ?",
                arguments: [projectID, page.limit, page.offset]
            ).map { try Self.group($0, in: db) }
        }
    }

    public func group(id: Int64) async throws -> CrashGroup? {
        try await pool.read { db in
            try Row.fetchOne(db, sql: "SELECT * FROM crash_groups WHERE id = ?", arguments: [id]).map {
                try Self.group($0, in: db)
            }
        }
    }

    public func occurrences(groupID: Int64, page: Page) async throws -> [Occurrence] {
        try await pool.read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT id, report_uuid, bundle_id, occurred_at, app_version, host, reason FROM reports
                    WHERE group_id = ? ORDER BY occurred_at DESC, id DESC LIMIT ? OFFSET ?
                    """,
                arguments: [groupID, page.limit, page.offset]
            ).map {
                Occurrence(
                    reportID: $0["id"], reportUUID: $0["report_uuid"], bundleID: $0["bundle_id"],
                    occurredAt: Date(timeIntervalSince1970: $0["occurred_at"]), appVersion: $0["app_version"],
                    host: $0["host"], reason: $0["reason"])
            }
        }
    }

    public func report(id: Int64) async throws -> StoredReport? {
        let found = try await pool.read { db -> (Int64, Int64, Int64, Data)? in
            try Row.fetchOne(db, sql: "SELECT id, bundle_id, group_id, json FROM reports WHERE id = ?", arguments: [id])
                .map { ($0["id"], $0["bundle_id"], $0["group_id"], $0["json"]) }
        }
        guard let (id, bundleID, groupID, json) = found else { return nil }
        return StoredReport(id: id, bundleID: bundleID, groupID: groupID, report: try CrashReport.decode(json))
    }

    public func bundles(projectID: Int64, page: Page) async throws -> [BundleRecord] {
        try await pool.read { db in
            try Row.fetchAll(
                db,
                sql: "SELECT * FROM bundles WHERE project_id = ? ORDER BY received_at DESC, id DESC LIMIT ? OFFSET ?",
                arguments: [projectID, page.limit, page.offset]
            ).map(Self.bundle)
        }
    }

    public func bundle(id: Int64) async throws -> BundleRecord? {
        try await pool.read { db in
            try db.cachedRow(sql: "SELECT * FROM bundles WHERE id = ?", arguments: [id]).map(Self.bundle)
        }
    }

    private static func file(_ row: Row) -> BundleFile {
        BundleFile(
            id: row["id"], bundleID: row["bundle_id"], path: row["path"],
            kind: BundleFile.Kind(rawValue: row["kind"]) ?? .other, size: row["size"], sha256: row["sha256"])
    }

    public func files(bundleID: Int64) async throws -> [BundleFile] {
        try await pool.read { db in
            try Row.fetchAll(
                db, sql: "SELECT * FROM bundle_files WHERE bundle_id = ? ORDER BY path", arguments: [bundleID]
            )
            .map(Self.file)
        }
    }

    public func file(id: Int64) async throws -> BundleFile? {
        try await pool.read { db in
            try Row.fetchOne(db, sql: "SELECT * FROM bundle_files WHERE id = ?", arguments: [id]).map(Self.file)
        }
    }

    /// Every word must appear (FTS5 syntax characters in the query are taken literally).
    static func matchExpression(_ query: String) -> String? {
        let terms = query.split(whereSeparator: { $0.isWhitespace }).map {
            "\"" + $0.replacingOccurrences(of: "\"", with: "\"\"") + "\""
        }
        return terms.isEmpty ? nil : terms.joined(separator: " ")
    }

    public func searchLogs(projectID: Int64, query: String, page: Page) async throws -> [LogHit] {
        guard let match = Self.matchExpression(query) else { return [] }
        return try await pool.read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT l.rowid AS rowid, l.text AS text, f.id AS file_id, f.bundle_id AS bundle_id, f.path AS path
                    FROM log_lines l JOIN bundle_files f ON f.id = l.rowid >> 24 JOIN bundles b ON b.id = f.bundle_id
                    WHERE log_lines MATCH ? AND b.project_id = ?
                    ORDER BY l.rowid DESC LIMIT ? OFFSET ?
                    """,
                arguments: [match, projectID, page.limit, page.offset]
            ).map { row in
                let rowid: Int64 = row["rowid"]
                return LogHit(
                    fileID: row["file_id"], bundleID: row["bundle_id"], path: row["path"],
                    lineNumber: Int(rowid & ((1 << Self.lineBits) - 1)), text: row["text"])
            }
        }
    }

    // MARK: Background work

    public func unindexedLogFiles(limit: Int) async throws -> [BundleFile] {
        try await pool.read { db in
            try db.cachedRows(
                sql: "SELECT * FROM bundle_files WHERE indexed = 0 AND kind = 'log' ORDER BY id LIMIT ?",
                arguments: [limit]
            ).map(Self.file)
        }
    }

    public func storeLogLines(_ files: [LogFileLines]) async throws {
        try await pool.write { db in
            for file in files { try Self.storeLogLines(file, in: db) }
        }
    }

    private static func storeLogLines(_ file: LogFileLines, in db: Database) throws {
        // The file may have been deleted by retention while its lines were being read: storing
        // them now would leave orphan index rows that nothing ever deletes.
        guard
            try db.cachedValue(Bool.self, sql: "SELECT 1 FROM bundle_files WHERE id = ?", arguments: [file.fileID])
                == true
        else {
            return
        }
        // Idempotent: storing a file again replaces its lines.
        let first = file.fileID << lineBits
        try db.executeCached(
            sql: "DELETE FROM log_lines WHERE rowid BETWEEN ? AND ?", arguments: [first, first + (1 << lineBits) - 1])
        let statement = try db.cachedStatement(
            sql: "INSERT INTO log_lines (rowid, text, file_id, line_number) VALUES (?, ?, ?, ?)")
        for (index, line) in file.lines.prefix(Int(1 << lineBits) - 1).enumerated() {
            try statement.execute(arguments: [first + Int64(index + 1), line, file.fileID, index + 1])
        }
        try db.executeCached(sql: "UPDATE bundle_files SET indexed = 1 WHERE id = ?", arguments: [file.fileID])
    }

    public func referencedBlobs(_ blobs: [String]) async throws -> Set<String> {
        try await pool.read { db in try Self.referencedBlobs(blobs, in: db) }
    }

    private static func referencedBlobs(_ blobs: [String], in db: Database) throws -> Set<String> {
        try Set(
            blobs.filter { blob in
                try db.cachedValue(Bool.self, sql: "SELECT 1 FROM bundles WHERE blob = ? LIMIT 1", arguments: [blob])
                    == true
            })
    }

    public func deleteBundles(receivedBefore cutoff: Date) async throws -> RetentionOutcome {
        let outcome = try await pool.write { db -> RetentionOutcome in
            let expired = try Row.fetchAll(
                db, sql: "SELECT id, blob FROM bundles WHERE received_at < ?", arguments: [cutoff.timeIntervalSince1970]
            )
            for bundle in expired {
                let id: Int64 = bundle["id"]
                for fileID in try Int64.fetchAll(
                    db, sql: "SELECT id FROM bundle_files WHERE bundle_id = ?", arguments: [id])
                {
                    let first = fileID << Self.lineBits
                    try db.execute(
                        sql: "DELETE FROM log_lines WHERE rowid BETWEEN ? AND ?",
                        arguments: [first, first + (1 << Self.lineBits) - 1])
                }
                try db.execute(sql: "DELETE FROM reports WHERE bundle_id = ?", arguments: [id])
                try db.execute(sql: "DELETE FROM bundle_files WHERE bundle_id = ?", arguments: [id])
                try db.execute(sql: "DELETE FROM bundles WHERE id = ?", arguments: [id])
            }
            // Groups keep their counts; a group whose latest report is gone points at the newest left.
            try db.execute(
                sql: """
                    UPDATE crash_groups SET latest_report_id =
                        (SELECT id FROM reports WHERE group_id = crash_groups.id ORDER BY occurred_at DESC LIMIT 1)
                    WHERE latest_report_id NOT IN (SELECT id FROM reports)
                    """)
            let candidates = Array(Set(expired.map { $0["blob"] as String })).sorted()
            let referenced = try Self.referencedBlobs(candidates, in: db)
            return RetentionOutcome(
                deletedBundles: expired.count, unreferencedBlobs: candidates.filter { !referenced.contains($0) })
        }
        // Give the freed pages back to the file system. FTS5 keeps deleted rows as tombstones in its
        // segments until they are merged: 'optimize' merges them away (it rewrites the index, so it
        // costs in proportion to the index; retention runs hourly), then the freed pages go.
        if outcome.deletedBundles > 0 {
            try await pool.write { db in try db.execute(sql: "INSERT INTO log_lines(log_lines) VALUES('optimize')") }
        }
        try await pool.writeWithoutTransaction { db in
            try db.execute(sql: "PRAGMA wal_checkpoint(TRUNCATE)")
            try db.execute(sql: "PRAGMA incremental_vacuum")
            try db.execute(sql: "PRAGMA wal_checkpoint(TRUNCATE)")
        }
        return outcome
    }
}

extension Database {
    // The ingest and indexing statements are compiled once per connection. Compiling is where GRDB
    // runs its authorizer and tracks the regions a statement touches; for these small statements
    // that cost more than executing them (profiled under the 10 KB upload benchmark: ~10 % of the
    // collector's CPU).
    fileprivate func executeCached(sql: String, arguments: StatementArguments = []) throws {
        try cachedStatement(sql: sql).execute(arguments: arguments)
    }

    fileprivate func cachedRow(sql: String, arguments: StatementArguments = []) throws -> Row? {
        try Row.fetchOne(cachedStatement(sql: sql), arguments: arguments)
    }

    fileprivate func cachedRows(sql: String, arguments: StatementArguments = []) throws -> [Row] {
        try Row.fetchAll(cachedStatement(sql: sql), arguments: arguments)
    }

    fileprivate func cachedValue<Value: DatabaseValueConvertible & StatementColumnConvertible>(
        _ type: Value.Type, sql: String, arguments: StatementArguments = []
    ) throws -> Value? {
        try Value.fetchOne(cachedStatement(sql: sql), arguments: arguments)
    }
}
