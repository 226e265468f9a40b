import Foundation

/// `SymbolicationStore`: the symbolication queue, and regrouping a symbolicated report. Instances
/// may symbolicate the same report at once: the report's row is locked and its epoch checked, so
/// exactly one applies it.
extension SQLDatabase {
    public func projectsDueForSymbolication(at now: Date) async throws -> [Int64] {
        try await rows(
            "SELECT DISTINCT project_id FROM reports WHERE symbolication = 'pending' AND symbolication_retry_at <= \(now)"
        ).map { try $0.decode("project_id") }
    }

    public func pendingSymbolication(projectID: Int64, at now: Date, limit: Int) async throws -> [PendingReport] {
        try await rows(
            """
            SELECT id, project_id, symbolication_epoch, json FROM reports
            WHERE symbolication = 'pending' AND project_id = \(projectID) AND symbolication_retry_at <= \(now)
            ORDER BY id LIMIT \(limit)
            """
        ).map { row in
            PendingReport(
                id: try row.decode("id"), projectID: try row.decode("project_id"),
                epoch: try row.decode("symbolication_epoch"), json: try row.decode("json"))
        }
    }

    /// A failed attempt at a report, at its epoch: counted, and either retried at a later time or,
    /// at the last attempt, given up (`missing` with the reason, which readers show as `failed`).
    /// SET reads the row's values from before the update in both dialects.
    public func symbolicationFailed(_ report: PendingReport, reason: String, retryAt: Date, maxAttempts: Int)
        async throws
    {
        try await write(
            """
            UPDATE reports SET symbolication_attempts = symbolication_attempts + 1, symbolication_retry_at = \(retryAt),
                symbolication = CASE WHEN symbolication_attempts + 1 >= \(maxAttempts) THEN 'missing' ELSE 'pending' END,
                symbolication_failure = CASE WHEN symbolication_attempts + 1 >= \(maxAttempts) THEN \(reason)
                    ELSE symbolication_failure END
            WHERE id = \(report.id) AND symbolication = 'pending' AND symbolication_epoch = \(report.epoch)
            """)
    }

    public func recordSymbolizerFailure(fileID: Int64) async throws -> Int {
        try await write(
            """
            UPDATE symbol_files SET symbolizer_failures = symbolizer_failures + 1 WHERE id = \(fileID)
            RETURNING symbolizer_failures
            """
        ).first?.decode("symbolizer_failures") ?? 0
    }

    public func markSymbolsMissing(_ reports: [PendingReport]) async throws {
        guard !reports.isEmpty else { return }
        try await write { connection in
            for report in reports {
                try connection.execute(
                    """
                    UPDATE reports SET symbolication = 'missing'
                    WHERE id = \(report.id) AND symbolication = 'pending' AND symbolication_epoch = \(report.epoch)
                    """)
            }
        }
    }

    public func applySymbolication(_ updates: [SymbolicationUpdate]) async throws -> [Bool] {
        try await write { connection in try updates.map { try SymbolicationTransaction.apply($0, connection) } }
    }

    public func requestSymbolication(projectID: Int64, buildID: String) async throws -> Int {
        try await write(
            """
            UPDATE reports SET symbolication = 'pending', symbolication_epoch = symbolication_epoch + 1,
                symbolication_attempts = 0, symbolication_retry_at = 0, symbolication_failure = NULL
            WHERE id IN (
                SELECT report_id FROM report_images
                WHERE project_id = \(projectID) AND build_id = \(buildID) AND NOT resolved)
            RETURNING id
            """
        ).count
    }

    public func missingSymbols(in scope: ProjectScope, page: Page) async throws -> [MissingSymbols] {
        try await rows(
            """
            SELECT i.build_id, count(*) AS reports, max(r.occurred_at) AS last_seen
            FROM report_images i JOIN reports r ON r.id = i.report_id
            WHERE i.project_id = \(scope.projectID) AND NOT i.resolved AND NOT EXISTS (
                SELECT 1 FROM symbol_files f
                WHERE f.project_id = i.project_id AND f.build_id = i.build_id AND f.has_debug_info)
            GROUP BY i.build_id ORDER BY reports DESC, i.build_id
            LIMIT \(page.limit) OFFSET \(page.offset)
            """
        ).map { row in
            MissingSymbols(
                buildID: try row.decode("build_id"), reports: try row.decode("reports"),
                lastSeen: try row.decode("last_seen"))
        }
    }

    public func reportCounts(buildIDs: [String], in scope: ProjectScope) async throws -> [String: Int] {
        guard !buildIDs.isEmpty else { return [:] }
        var counts: [String: Int] = [:]
        for row in try await rows(
            """
            SELECT build_id, count(*) AS reports FROM report_images
            WHERE project_id = \(scope.projectID) AND build_id IN (\(list: buildIDs)) GROUP BY build_id
            """)
        {
            counts[try row.decode("build_id")] = try row.decode("reports")
        }
        return counts
    }

    public func moves(fromGroup groupID: Int64, in scope: ProjectScope) async throws -> [GroupMove] {
        try await rows(
            """
            SELECT m.to_group_id, m.count, m.last_moved_at FROM group_moves m
            JOIN crash_groups g ON g.id = m.from_group_id
            WHERE m.from_group_id = \(groupID) AND g.project_id = \(scope.projectID)
            ORDER BY m.count DESC, m.to_group_id
            """
        ).map { row in
            GroupMove(
                toGroupID: try row.decode("to_group_id"), count: try row.decode("count"),
                lastMovedAt: try row.decode("last_moved_at"))
        }
    }

    public func pendingSymbolicationCount() async throws -> Int {
        try await rows("SELECT count(*) AS pending FROM reports WHERE symbolication = 'pending'").first?
            .decode("pending") ?? 0
    }
}

enum SymbolicationTransaction {
    /// Applies one symbolicated report at the epoch it was read at; false when it changed since
    /// (a newer request, or another instance applied it).
    static func apply(_ update: SymbolicationUpdate, _ connection: some SQLConnection) throws -> Bool {
        let reportID = update.report.id
        guard
            let report = try connection.row(
                """
                SELECT group_id, project_id FROM reports
                WHERE id = \(reportID) AND symbolication = 'pending' AND symbolication_epoch = \(update.report.epoch)
                \(.forUpdate)
                """)
        else { return false }
        let (oldGroup, projectID): (Int64, Int64) = (try report.decode("group_id"), try report.decode("project_id"))
        guard
            let oldSignature = try connection.value(
                "SELECT signature FROM crash_groups WHERE id = \(oldGroup)", as: String.self)
        else { return false }
        let state = update.complete ? "done" : "missing"
        try connection.execute(
            """
            UPDATE reports SET json = \(update.json), reason = \(update.reason), symbolication = \(state),
                symbolication_failure = \(update.failure), diagnosis = \(update.diagnosis)
            WHERE id = \(reportID)
            """)
        if !update.resolvedBuildIDs.isEmpty {
            try connection.execute(
                """
                UPDATE report_images SET resolved = true
                WHERE report_id = \(reportID) AND build_id IN (\(list: update.resolvedBuildIDs))
                """)
        }
        guard update.signature.hash != oldSignature else { return true }
        try GroupMoves.move(
            RegroupedReport(
                id: reportID, signature: update.signature, kind: update.kind, occurredAt: update.occurredAt,
                versionKey: update.versionKey, hostKey: update.hostKey),
            from: oldGroup, projectID: projectID, connection)
        return true
    }
}
