import Foundation
import Logging
import PostgresNIO

/// `SymbolicationStore`: the symbolication queue, and regrouping a symbolicated report. Instances
/// may symbolicate the same report at once: the report's row is locked and its epoch checked, so
/// exactly one applies it.
extension PostgresStore {
    public func projectsDueForSymbolication(at now: Date) async throws -> [Int64] {
        try await read(
            """
            SELECT DISTINCT project_id FROM reports
            WHERE symbolication = 'pending' AND symbolication_retry_at <= \(now.timeIntervalSince1970)
            """
        ) { try $0["project_id"].decode(Int64.self) }
    }

    public func pendingSymbolication(projectID: Int64, at now: Date, limit: Int) async throws -> [PendingReport] {
        try await read(
            """
            SELECT id, project_id, symbolication_epoch, json FROM reports
            WHERE symbolication = 'pending' AND project_id = \(projectID)
                AND symbolication_retry_at <= \(now.timeIntervalSince1970)
            ORDER BY id LIMIT \(Int64(limit))
            """
        ) {
            PendingReport(
                id: try $0["id"].decode(Int64.self), projectID: try $0["project_id"].decode(Int64.self),
                epoch: try $0["symbolication_epoch"].decode(Int64.self), json: try $0["json"].decode(Data.self))
        }
    }

    public func symbolicationFailed(_ report: PendingReport, reason: String, retryAt: Date, maxAttempts: Int)
        async throws
    {
        let statement = Self.query(
            SymbolicationSQL.failedAttempt(report, reason: reason, retryAt: retryAt, maxAttempts: maxAttempts))
        try await transaction { connection, logger in _ = try await connection.query(statement, logger: logger) }
    }

    public func recordSymbolizerFailure(fileID: Int64) async throws -> Int {
        try await read(
            """
            UPDATE symbol_files SET symbolizer_failures = symbolizer_failures + 1 WHERE id = \(fileID)
            RETURNING symbolizer_failures
            """
        ) { Int(try $0["symbolizer_failures"].decode(Int64.self)) }.first ?? 0
    }

    public func markSymbolsMissing(_ reports: [PendingReport]) async throws {
        guard !reports.isEmpty else { return }
        try await transaction { connection, logger in
            for report in reports {
                try await connection.query(
                    """
                    UPDATE reports SET symbolication = 'missing'
                    WHERE id = \(report.id) AND symbolication = 'pending' AND symbolication_epoch = \(report.epoch)
                    """, logger: logger)
            }
        }
    }

    public func applySymbolication(_ updates: [SymbolicationUpdate]) async throws -> [Bool] {
        try await transaction { connection, logger in
            var applied: [Bool] = []
            for update in updates { applied.append(try await Self.apply(update, connection, logger)) }
            return applied
        }
    }

    static func apply(_ update: SymbolicationUpdate, _ connection: PostgresConnection, _ logger: Logger)
        async throws -> Bool
    {
        let reportID = update.report.id
        guard
            let (oldGroup, projectID) = try await rows(
                connection,
                """
                SELECT group_id, project_id FROM reports
                WHERE id = \(reportID) AND symbolication = 'pending' AND symbolication_epoch = \(update.report.epoch)
                FOR UPDATE
                """, logger: logger,
                { (try $0["group_id"].decode(Int64.self), try $0["project_id"].decode(Int64.self)) }
            ).first,
            let oldSignature = try await rows(
                connection, "SELECT signature FROM crash_groups WHERE id = \(oldGroup)", logger: logger,
                { try $0["signature"].decode(String.self) }
            ).first
        else { return false }
        let state = update.complete ? "done" : "missing"
        try await connection.query(
            """
            UPDATE reports SET json = \(update.json), reason = \(update.reason), symbolication = \(state),
                symbolication_failure = \(update.failure)
            WHERE id = \(reportID)
            """, logger: logger)
        try await connection.query(
            """
            UPDATE report_images SET resolved = true
            WHERE report_id = \(reportID) AND build_id = ANY(\(update.resolvedBuildIDs))
            """, logger: logger)
        guard update.signature.hash != oldSignature else { return true }
        let occurred = update.occurredAt.timeIntervalSince1970
        let (newGroup, _) = try await group(
            for: update.signature, kind: update.kind, occurredAt: occurred, projectID: projectID, connection,
            logger)
        try await connection.query(
            "UPDATE reports SET group_id = \(newGroup) WHERE id = \(reportID)", logger: logger)
        try await uncount(
            versionKey: update.versionKey, hostKey: update.hostKey, from: oldGroup, connection, logger)
        try await count(
            reportID: reportID, occurredAt: occurred, versionKey: update.versionKey, hostKey: update.hostKey,
            in: newGroup, connection, logger)
        try await connection.query(
            """
            INSERT INTO group_moves (from_group_id, to_group_id, count, last_moved_at)
            VALUES (\(oldGroup), \(newGroup), 1, \(Date().timeIntervalSince1970))
            ON CONFLICT (from_group_id, to_group_id) DO UPDATE SET count = group_moves.count + 1,
                last_moved_at = excluded.last_moved_at
            """, logger: logger)
        return true
    }

    /// See `SQLiteStore.uncount`.
    static func uncount(
        versionKey version: String, hostKey host: String, from groupID: Int64, _ connection: PostgresConnection,
        _ logger: Logger
    ) async throws {
        let other = CrashGroup.otherValues
        try await connection.query(
            """
            UPDATE crash_groups SET count = count - 1,
                latest_report_id = (SELECT id FROM reports WHERE group_id = crash_groups.id
                    ORDER BY occurred_at DESC, id DESC LIMIT 1)
            WHERE id = \(groupID)
            """, logger: logger)
        try await connection.query(
            """
            UPDATE group_versions SET count = count - 1 WHERE group_id = \(groupID) AND app_version = CASE
                WHEN EXISTS (SELECT 1 FROM group_versions WHERE group_id = \(groupID) AND app_version = \(version))
                THEN \(version) ELSE \(other) END
            """, logger: logger)
        try await connection.query(
            """
            UPDATE group_hosts SET count = count - 1 WHERE group_id = \(groupID) AND host = CASE
                WHEN EXISTS (SELECT 1 FROM group_hosts WHERE group_id = \(groupID) AND host = \(host))
                THEN \(host) ELSE \(other) END
            """, logger: logger)
    }

    public func requestSymbolication(projectID: Int64, buildID: String) async throws -> Int {
        try await read(
            """
            UPDATE reports SET symbolication = 'pending', symbolication_epoch = symbolication_epoch + 1,
                symbolication_attempts = 0, symbolication_retry_at = 0, symbolication_failure = NULL
            WHERE id IN (
                SELECT report_id FROM report_images
                WHERE project_id = \(projectID) AND build_id = \(buildID) AND NOT resolved)
            RETURNING id
            """
        ) { try $0["id"].decode(Int64.self) }.count
    }

    public func missingSymbols(in scope: ProjectScope, page: Page) async throws -> [MissingSymbols] {
        try await read(
            """
            SELECT i.build_id, count(*) AS reports, max(r.occurred_at) AS last_seen
            FROM report_images i JOIN reports r ON r.id = i.report_id
            WHERE i.project_id = \(scope.projectID) AND NOT i.resolved AND NOT EXISTS (
                SELECT 1 FROM symbol_files f
                WHERE f.project_id = i.project_id AND f.build_id = i.build_id AND f.has_debug_info)
            GROUP BY i.build_id ORDER BY reports DESC, i.build_id
            LIMIT \(Int64(page.limit)) OFFSET \(Int64(page.offset))
            """
        ) {
            MissingSymbols(
                buildID: try $0["build_id"].decode(String.self), reports: Int(try $0["reports"].decode(Int64.self)),
                lastSeen: Date(timeIntervalSince1970: try $0["last_seen"].decode(Double.self)))
        }
    }

    public func reportCounts(buildIDs: [String], in scope: ProjectScope) async throws -> [String: Int] {
        guard !buildIDs.isEmpty else { return [:] }
        let rows = try await read(
            """
            SELECT build_id, count(*) AS reports FROM report_images
            WHERE project_id = \(scope.projectID) AND build_id = ANY(\(buildIDs)) GROUP BY build_id
            """
        ) { (try $0["build_id"].decode(String.self), Int(try $0["reports"].decode(Int64.self))) }
        return Dictionary(uniqueKeysWithValues: rows)
    }

    public func moves(fromGroup groupID: Int64, in scope: ProjectScope) async throws -> [GroupMove] {
        try await read(
            """
            SELECT m.to_group_id, m.count, m.last_moved_at FROM group_moves m
            JOIN crash_groups g ON g.id = m.from_group_id
            WHERE m.from_group_id = \(groupID) AND g.project_id = \(scope.projectID)
            ORDER BY m.count DESC, m.to_group_id
            """
        ) {
            GroupMove(
                toGroupID: try $0["to_group_id"].decode(Int64.self), count: Int(try $0["count"].decode(Int64.self)),
                lastMovedAt: Date(timeIntervalSince1970: try $0["last_moved_at"].decode(Double.self)))
        }
    }

    public func pendingSymbolicationCount() async throws -> Int {
        try await read("SELECT count(*) AS pending FROM reports WHERE symbolication = 'pending'") {
            Int(try $0["pending"].decode(Int64.self))
        }.first ?? 0
    }
}
