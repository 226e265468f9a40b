import BlackboxFormat
import Foundation
import GRDB

/// `ProjectReader`: every query filters by the scope's project.
extension SQLiteStore {
    /// Groups with their version and host tallies: three queries for a whole page.
    static func groups(_ rows: [Row], in db: Database) throws -> [CrashGroup] {
        guard !rows.isEmpty else { return [] }
        let ids = rows.map { $0["id"] as Int64 }
        let placeholders = databaseQuestionMarks(count: ids.count)
        var versions: [Int64: [String: Int]] = [:]
        for row in try Row.fetchAll(
            db,
            sql:
                "SELECT group_id, app_version, count FROM group_versions WHERE group_id IN (\(placeholders)) AND count > 0",
            arguments: StatementArguments(ids))
        {
            versions[row["group_id"], default: [:]][row["app_version"]] = row["count"]
        }
        var hosts: [Int64: [String: Int]] = [:]
        for row in try Row.fetchAll(
            db, sql: "SELECT group_id, host, count FROM group_hosts WHERE group_id IN (\(placeholders)) AND count > 0",
            arguments: StatementArguments(ids))
        {
            hosts[row["group_id"], default: [:]][row["host"]] = row["count"]
        }
        return rows.map { row in
            let id: Int64 = row["id"]
            var group = CrashGroup(
                id: id, projectID: row["project_id"], signature: row["signature"],
                signatureVersion: row["signature_version"],
                kind: row["kind"], title: row["title"], count: row["count"],
                firstSeen: Date(timeIntervalSince1970: row["first_seen"]),
                lastSeen: Date(timeIntervalSince1970: row["last_seen"]),
                latestReportID: row["latest_report_id"], versions: versions[id] ?? [:], hosts: hosts[id] ?? [:])
            group.status = status(row)
            return group
        }
    }

    public func groups(in scope: ProjectScope, query: GroupQuery, page: Page) async throws -> [CrashGroup] {
        let statement = GroupQuerySQL(query, projectID: scope.projectID, page: page)
        let values = statement.arguments.map { argument -> DatabaseValue in
            switch argument {
            case .integer(let value): value.databaseValue
            case .text(let value): value.databaseValue
            case .real(let value): value.databaseValue
            }
        }
        return try await pool.read { db in
            try Self.groups(Row.fetchAll(db, sql: statement.sql, arguments: StatementArguments(values)), in: db)
        }
    }

    public func occurrenceHistogram(
        groupIDs: [Int64], in scope: ProjectScope, since: Date, bucketSeconds: Int, buckets: Int
    ) async throws -> [Int64: [Int]] {
        guard !groupIDs.isEmpty, buckets > 0, bucketSeconds > 0 else { return [:] }
        let start = since.timeIntervalSince1970
        let end = start + Double(bucketSeconds * buckets)
        let values =
            [start.databaseValue, Double(bucketSeconds).databaseValue, scope.projectID.databaseValue]
            + groupIDs.map(\.databaseValue) + [start.databaseValue, end.databaseValue]
        let rows = try await pool.read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT group_id, CAST((occurred_at - ?) / ? AS INTEGER) AS bucket, count(*) AS n FROM reports
                    WHERE project_id = ? AND group_id IN (\(databaseQuestionMarks(count: groupIDs.count)))
                        AND occurred_at >= ? AND occurred_at < ?
                    GROUP BY group_id, bucket
                    """,
                arguments: StatementArguments(values)
            ).map { (group: $0["group_id"] as Int64, bucket: $0["bucket"] as Int, count: $0["n"] as Int) }
        }
        return histogram(groupIDs: groupIDs, buckets: buckets, rows: rows)
    }

    public func group(id: Int64, in scope: ProjectScope) async throws -> CrashGroup? {
        try await pool.read { db in
            try Self.groups(
                Row.fetchAll(
                    db, sql: "SELECT * FROM crash_groups WHERE id = ? AND project_id = ?",
                    arguments: [id, scope.projectID]),
                in: db
            ).first
        }
    }

    public func occurrences(groupID: Int64, in scope: ProjectScope, page: Page) async throws -> [Occurrence] {
        try await pool.read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT id, report_uuid, bundle_id, occurred_at, app_version, host, reason FROM reports
                    WHERE group_id = ? AND project_id = ? ORDER BY occurred_at DESC, id DESC LIMIT ? OFFSET ?
                    """,
                arguments: [groupID, scope.projectID, page.limit, page.offset]
            ).map {
                Occurrence(
                    reportID: $0["id"], reportUUID: $0["report_uuid"], bundleID: $0["bundle_id"],
                    occurredAt: Date(timeIntervalSince1970: $0["occurred_at"]), appVersion: $0["app_version"],
                    host: $0["host"], reason: $0["reason"])
            }
        }
    }

    public func report(id: Int64, in scope: ProjectScope) async throws -> StoredReport? {
        let found = try await pool.read { db -> (Int64, Int64, Int64, Data, ReportSymbolication?)? in
            try Row.fetchOne(
                db,
                sql: """
                    SELECT id, bundle_id, group_id, json, symbolication, symbolication_attempts, symbolication_failure
                    FROM reports WHERE id = ? AND project_id = ?
                    """,
                arguments: [id, scope.projectID]
            )
            .map {
                (
                    $0["id"], $0["bundle_id"], $0["group_id"], $0["json"],
                    ReportSymbolication(
                        column: $0["symbolication"], attempts: $0["symbolication_attempts"],
                        failure: $0["symbolication_failure"])
                )
            }
        }
        guard let (id, bundleID, groupID, json, symbolication) = found else { return nil }
        return StoredReport(
            id: id, bundleID: bundleID, groupID: groupID, report: try CrashReport.decode(json),
            symbolication: symbolication)
    }

    public func bundles(in scope: ProjectScope, page: Page) async throws -> [BundleRecord] {
        try await pool.read { db in
            try Row.fetchAll(
                db,
                sql: "SELECT * FROM bundles WHERE project_id = ? ORDER BY received_at DESC, id DESC LIMIT ? OFFSET ?",
                arguments: [scope.projectID, page.limit, page.offset]
            ).map(Self.bundle)
        }
    }

    public func bundle(id: Int64, in scope: ProjectScope) async throws -> BundleRecord? {
        try await pool.read { db in
            try db.cachedRow(
                sql: "SELECT * FROM bundles WHERE id = ? AND project_id = ?", arguments: [id, scope.projectID]
            ).map(Self.bundle)
        }
    }

    public func files(bundleID: Int64, in scope: ProjectScope) async throws -> [BundleFile] {
        try await pool.read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT f.* FROM bundle_files f JOIN bundles b ON b.id = f.bundle_id
                    WHERE f.bundle_id = ? AND b.project_id = ? ORDER BY f.path
                    """,
                arguments: [bundleID, scope.projectID]
            )
            .map(Self.file)
        }
    }

    public func file(id: Int64, in scope: ProjectScope) async throws -> BundleFile? {
        try await pool.read { db in
            try Row.fetchOne(
                db,
                sql: """
                    SELECT f.* FROM bundle_files f JOIN bundles b ON b.id = f.bundle_id
                    WHERE f.id = ? AND b.project_id = ?
                    """,
                arguments: [id, scope.projectID]
            ).map(Self.file)
        }
    }

    /// Every word must appear (FTS5 syntax characters in the query are taken literally).
    static func matchExpression(_ query: String) -> String? {
        let terms = query.split(whereSeparator: { $0.isWhitespace }).map {
            "\"" + $0.replacingOccurrences(of: "\"", with: "\"\"") + "\""
        }
        return terms.isEmpty ? nil : terms.joined(separator: " ")
    }

    public func searchLogs(in scope: ProjectScope, query: String, page: Page) async throws -> [LogHit] {
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
                arguments: [match, scope.projectID, page.limit, page.offset]
            ).map { row in
                let rowid: Int64 = row["rowid"]
                return LogHit(
                    fileID: row["file_id"], bundleID: row["bundle_id"], path: row["path"],
                    lineNumber: Int(rowid & ((1 << Self.lineBits) - 1)), text: row["text"])
            }
        }
    }
}
