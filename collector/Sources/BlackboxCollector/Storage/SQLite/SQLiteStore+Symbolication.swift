import Foundation
import GRDB

/// `SymbolicationStore`: the symbolication queue, and regrouping a symbolicated report.
extension SQLiteStore {
    public func projectsDueForSymbolication(at now: Date) async throws -> [Int64] {
        try await pool.read { db in
            try Int64.fetchAll(
                db,
                sql: """
                    SELECT DISTINCT project_id FROM reports
                    WHERE symbolication = 'pending' AND symbolication_retry_at <= ?
                    """,
                arguments: [now.timeIntervalSince1970])
        }
    }

    public func pendingSymbolication(projectID: Int64, at now: Date, limit: Int) async throws -> [PendingReport] {
        try await pool.read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT id, project_id, symbolication_epoch, json FROM reports
                    WHERE symbolication = 'pending' AND project_id = ? AND symbolication_retry_at <= ?
                    ORDER BY id LIMIT ?
                    """,
                arguments: [projectID, now.timeIntervalSince1970, limit]
            ).map {
                PendingReport(
                    id: $0["id"], projectID: $0["project_id"], epoch: $0["symbolication_epoch"], json: $0["json"])
            }
        }
    }

    public func symbolicationFailed(_ report: PendingReport, reason: String, retryAt: Date, maxAttempts: Int)
        async throws
    {
        let (sql, arguments) = SymbolicationSQL.failedAttempt(
            report, reason: reason, retryAt: retryAt, maxAttempts: maxAttempts)
        let values = Self.values(arguments)
        try await pool.write { db in try db.execute(sql: sql, arguments: StatementArguments(values)) }
    }

    public func recordSymbolizerFailure(fileID: Int64) async throws -> Int {
        try await pool.write { db in
            try Int.fetchOne(
                db,
                sql: """
                    UPDATE symbol_files SET symbolizer_failures = symbolizer_failures + 1 WHERE id = ?
                    RETURNING symbolizer_failures
                    """,
                arguments: [fileID]) ?? 0
        }
    }

    public func markSymbolsMissing(_ reports: [PendingReport]) async throws {
        try await pool.write { db in
            for report in reports {
                try db.executeCached(
                    sql: """
                        UPDATE reports SET symbolication = 'missing'
                        WHERE id = ? AND symbolication = 'pending' AND symbolication_epoch = ?
                        """,
                    arguments: [report.id, report.epoch])
            }
        }
    }

    public func applySymbolication(_ updates: [SymbolicationUpdate]) async throws -> [Bool] {
        try await pool.write { db in try updates.map { try Self.apply($0, in: db) } }
    }

    static func apply(_ update: SymbolicationUpdate, in db: Database) throws -> Bool {
        let reportID = update.report.id
        guard
            let current = try Row.fetchOne(
                db,
                sql: """
                    SELECT r.group_id, r.project_id, g.signature FROM reports r JOIN crash_groups g ON g.id = r.group_id
                    WHERE r.id = ? AND r.symbolication = 'pending' AND r.symbolication_epoch = ?
                    """,
                arguments: [reportID, update.report.epoch])
        else { return false }
        let (oldGroup, projectID, oldSignature): (Int64, Int64, String) =
            (current["group_id"], current["project_id"], current["signature"])
        try db.execute(
            sql: "UPDATE reports SET json = ?, reason = ?, symbolication = ?, symbolication_failure = ? WHERE id = ?",
            arguments: [update.json, update.reason, update.complete ? "done" : "missing", update.failure, reportID])
        for buildID in update.resolvedBuildIDs {
            try db.execute(
                sql: "UPDATE report_images SET resolved = 1 WHERE report_id = ? AND build_id = ?",
                arguments: [reportID, buildID])
        }
        guard update.signature.hash != oldSignature else { return true }
        let occurred = update.occurredAt.timeIntervalSince1970
        let newGroup = try group(
            for: update.signature, kind: update.kind, occurredAt: occurred, projectID: projectID, in: db
        ).id
        try db.execute(sql: "UPDATE reports SET group_id = ? WHERE id = ?", arguments: [newGroup, reportID])
        try uncount(versionKey: update.versionKey, hostKey: update.hostKey, from: oldGroup, db)
        try count(
            reportID: reportID, occurredAt: occurred, versionKey: update.versionKey, hostKey: update.hostKey,
            in: newGroup, db)
        try db.execute(
            sql: """
                INSERT INTO group_moves (from_group_id, to_group_id, count, last_moved_at) VALUES (?, ?, 1, ?)
                ON CONFLICT (from_group_id, to_group_id) DO UPDATE SET count = count + 1,
                    last_moved_at = excluded.last_moved_at
                """,
            arguments: [oldGroup, newGroup, Date().timeIntervalSince1970])
        return true
    }

    /// Takes one occurrence, which has moved to another group, off a group's count and tallies (the
    /// version and host were counted by name, or under `other` when they were not tracked). First and
    /// last seen stay: they say when the group was seen, and retention may have taken older reports.
    static func uncount(versionKey: String, hostKey: String, from groupID: Int64, _ db: Database) throws {
        try db.execute(
            sql: """
                UPDATE crash_groups SET count = count - 1,
                    latest_report_id = (SELECT id FROM reports WHERE group_id = crash_groups.id
                        ORDER BY occurred_at DESC, id DESC LIMIT 1)
                WHERE id = ?
                """,
            arguments: [groupID])
        try db.execute(
            sql: """
                UPDATE group_versions SET count = count - 1 WHERE group_id = ? AND app_version = CASE
                    WHEN EXISTS (SELECT 1 FROM group_versions WHERE group_id = ? AND app_version = ?) THEN ? ELSE ? END
                """,
            arguments: [groupID, groupID, versionKey, versionKey, CrashGroup.otherValues])
        try db.execute(
            sql: """
                UPDATE group_hosts SET count = count - 1 WHERE group_id = ? AND host = CASE
                    WHEN EXISTS (SELECT 1 FROM group_hosts WHERE group_id = ? AND host = ?) THEN ? ELSE ? END
                """,
            arguments: [groupID, groupID, hostKey, hostKey, CrashGroup.otherValues])
    }

    public func requestSymbolication(projectID: Int64, buildID: String) async throws -> Int {
        try await pool.write { db in
            try db.execute(
                sql: """
                    UPDATE reports SET symbolication = 'pending', symbolication_epoch = symbolication_epoch + 1,
                        symbolication_attempts = 0, symbolication_retry_at = 0, symbolication_failure = NULL
                    WHERE id IN (SELECT report_id FROM report_images WHERE project_id = ? AND build_id = ? AND NOT resolved)
                    """,
                arguments: [projectID, buildID])
            return db.changesCount
        }
    }

    public func missingSymbols(in scope: ProjectScope, page: Page) async throws -> [MissingSymbols] {
        try await pool.read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT i.build_id, count(*) AS reports, max(r.occurred_at) AS last_seen
                    FROM report_images i JOIN reports r ON r.id = i.report_id
                    WHERE i.project_id = ? AND NOT i.resolved AND NOT EXISTS (
                        SELECT 1 FROM symbol_files f
                        WHERE f.project_id = i.project_id AND f.build_id = i.build_id AND f.has_debug_info)
                    GROUP BY i.build_id ORDER BY reports DESC, i.build_id LIMIT ? OFFSET ?
                    """,
                arguments: [scope.projectID, page.limit, page.offset]
            ).map {
                MissingSymbols(
                    buildID: $0["build_id"], reports: $0["reports"],
                    lastSeen: Date(timeIntervalSince1970: $0["last_seen"]))
            }
        }
    }

    public func reportCounts(buildIDs: [String], in scope: ProjectScope) async throws -> [String: Int] {
        guard !buildIDs.isEmpty else { return [:] }
        return try await pool.read { db in
            let rows = try Row.fetchAll(
                db,
                sql: """
                    SELECT build_id, count(*) AS reports FROM report_images
                    WHERE project_id = ? AND build_id IN (SELECT value FROM json_each(?)) GROUP BY build_id
                    """,
                arguments: [scope.projectID, String(decoding: try JSONEncoder().encode(buildIDs), as: UTF8.self)])
            return Dictionary(uniqueKeysWithValues: rows.map { ($0["build_id"], $0["reports"]) })
        }
    }

    public func moves(fromGroup groupID: Int64, in scope: ProjectScope) async throws -> [GroupMove] {
        try await pool.read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT m.to_group_id, m.count, m.last_moved_at FROM group_moves m
                    JOIN crash_groups g ON g.id = m.from_group_id
                    WHERE m.from_group_id = ? AND g.project_id = ? ORDER BY m.count DESC, m.to_group_id
                    """,
                arguments: [groupID, scope.projectID]
            ).map {
                GroupMove(
                    toGroupID: $0["to_group_id"], count: $0["count"],
                    lastMovedAt: Date(timeIntervalSince1970: $0["last_moved_at"]))
            }
        }
    }

    public func pendingSymbolicationCount() async throws -> Int {
        try await pool.read { db in
            try Int.fetchOne(db, sql: "SELECT count(*) FROM reports WHERE symbolication = 'pending'") ?? 0
        }
    }
}
