import BlackboxFormat
import Foundation

/// `ReleaseStore`: release health from the session counts bundles carry.
extension SQLDatabase {
    public func releases(in scope: ProjectScope, page: Page) async throws -> [ReleaseHealth] {
        try await rows(ReleaseStatements.releases(projectID: scope.projectID, version: nil, page: page))
            .map(ReleaseStatements.health)
    }

    public func release(version: String, in scope: ProjectScope) async throws -> ReleaseHealth? {
        try await rows(ReleaseStatements.releases(projectID: scope.projectID, version: version, page: Page(limit: 1)))
            .first.map(ReleaseStatements.health)
    }

    public func releaseDays(version: String, in scope: ProjectScope, since: Date, days: Int) async throws
        -> (sessions: [Int], clean: [Int])
    {
        let firstDay = ReleaseStatements.day(since)
        var sessions = Array(repeating: 0, count: days)
        var clean = Array(repeating: 0, count: days)
        for row in try await rows(
            """
            SELECT day, CAST(sum(clean + crashed + hung + killed) AS BIGINT) AS sessions,
                CAST(sum(clean) AS BIGINT) AS clean
            FROM release_sessions
            WHERE project_id = \(scope.projectID) AND app_version = \(version) AND day >= \(firstDay)
                AND day < \(firstDay + Int64(days))
            GROUP BY day
            """)
        {
            let index = Int(try row.decode("day", as: Int64.self) - firstDay)
            guard sessions.indices.contains(index) else { continue }
            sessions[index] = try row.decode("sessions")
            clean[index] = try row.decode("clean")
        }
        return (sessions, clean)
    }

    public func losses(in scope: ProjectScope, since: Date) async throws -> [ReleaseLoss] {
        try await rows(
            """
            SELECT app_version, category, reason, CAST(sum(quantity) AS BIGINT) AS quantity, max(day) AS last_day
            FROM release_losses WHERE project_id = \(scope.projectID) AND day >= \(ReleaseStatements.day(since))
            GROUP BY app_version, category, reason
            ORDER BY max(day) DESC, sum(quantity) DESC, app_version, category, reason LIMIT \(ReleaseLoss.maxListed)
            """
        ).map { row in
            ReleaseLoss(
                version: try row.decode("app_version"), category: try row.decode("category"),
                reason: try row.decode("reason"), quantity: try row.decode("quantity"),
                lastDay: Date(timeIntervalSince1970: Double(try row.decode("last_day", as: Int64.self)) * 86_400))
        }
    }
}

enum ReleaseStatements {
    /// Adds the plan's session counts (in the ingest transaction, only for a bundle stored now) to the
    /// day it arrived. A version the project has rows for is counted by name; a new one too, unless
    /// `ReleaseHealth.maxVersions` versions had runs since yesterday: then it is counted under
    /// "(other)". Only recent versions count against the cap, and retention deletes days past the
    /// retention period, so versions made up by someone holding the (public) ingest key crowd real
    /// ones out only while they keep sending them, never for good.
    static func addSessions(_ plan: IngestPlan, _ connection: some SQLConnection) throws {
        let projectID = plan.bundle.projectID
        let day = day(plan.bundle.receivedAt)
        for row in plan.sessions {
            try connection.execute(
                """
                INSERT INTO release_sessions (project_id, app_version, day, clean, crashed, hung, killed, requests,
                    request_errors, crashed_requests)
                SELECT \(projectID), CASE WHEN EXISTS (
                        SELECT 1 FROM release_sessions WHERE project_id = \(projectID) AND app_version = \(row.versionKey))
                        OR (SELECT count(DISTINCT app_version) FROM release_sessions
                            WHERE project_id = \(projectID) AND day >= \(day - 1)) < \(ReleaseHealth.maxVersions)
                    THEN \(row.versionKey) ELSE \(CrashGroup.otherValues) END,
                    \(day), \(row.clean), \(row.crashed), \(row.hung), \(row.killed), \(row.requests.total),
                    \(row.requests.serverErrors), \(row.requests.crashed)
                WHERE true
                ON CONFLICT (project_id, app_version, day) DO UPDATE SET clean = release_sessions.clean + excluded.clean,
                    crashed = release_sessions.crashed + excluded.crashed, hung = release_sessions.hung + excluded.hung,
                    killed = release_sessions.killed + excluded.killed,
                    requests = release_sessions.requests + excluded.requests,
                    request_errors = release_sessions.request_errors + excluded.request_errors,
                    crashed_requests = release_sessions.crashed_requests + excluded.crashed_requests
                """)
            // Release regressions order versions that are not semantic versions (a commit hash) by
            // when the collector first saw them (`ReleaseRegressionRule.isOlder`).
            if row.requests.total > 0, SemanticVersion(row.versionKey) == nil {
                try connection.execute(
                    """
                    INSERT INTO app_versions (project_id, version, first_seen)
                    SELECT \(projectID), \(row.versionKey), \(plan.bundle.receivedAt)
                    WHERE EXISTS (
                        SELECT 1 FROM release_sessions WHERE project_id = \(projectID) AND app_version = \(row.versionKey))
                    ON CONFLICT DO NOTHING
                    """)
            }
        }
    }

    /// Adds the plan's delivery losses to the day it arrived, as `addSessions` adds runs. A sender
    /// names its categories and reasons (bounded words, `LossRows`): once a project has
    /// `ReleaseLoss.maxRowsPerDay` rows for the day, a new combination counts as `other`.
    static func addLosses(_ plan: IngestPlan, _ connection: some SQLConnection) throws {
        let projectID = plan.bundle.projectID
        let day = day(plan.bundle.receivedAt)
        for row in plan.losses {
            let known: SQLStatement = """
                EXISTS (SELECT 1 FROM release_losses WHERE project_id = \(projectID) AND app_version = \(row.versionKey)
                    AND day = \(day) AND category = \(row.category) AND reason = \(row.reason))
                OR (SELECT count(*) FROM release_losses WHERE project_id = \(projectID) AND day = \(day))
                    < \(ReleaseLoss.maxRowsPerDay)
                """
            try connection.execute(
                """
                INSERT INTO release_losses (project_id, app_version, day, category, reason, quantity)
                SELECT \(projectID), CASE WHEN \(known) THEN \(row.versionKey) ELSE \(CrashGroup.otherValues) END, \(day),
                    CASE WHEN \(known) THEN \(row.category) ELSE 'other' END,
                    CASE WHEN \(known) THEN \(row.reason) ELSE 'other' END, \(row.quantity)
                WHERE true
                ON CONFLICT (project_id, app_version, day, category, reason)
                    DO UPDATE SET quantity = release_losses.quantity + excluded.quantity
                """)
        }
    }

    /// Per version: summed counts, first and last day, and how many groups were seen in it.
    static func releases(projectID: Int64, version: String?, page: Page) -> SQLStatement {
        let filter: SQLStatement = version.map { " AND app_version = \($0)" } ?? ""
        return """
            SELECT app_version, CAST(sum(clean) AS BIGINT) AS clean, CAST(sum(crashed) AS BIGINT) AS crashed,
                CAST(sum(hung) AS BIGINT) AS hung, CAST(sum(killed) AS BIGINT) AS killed,
                CAST(sum(requests) AS BIGINT) AS requests, CAST(sum(request_errors) AS BIGINT) AS request_errors,
                CAST(sum(crashed_requests) AS BIGINT) AS crashed_requests,
                min(day) AS first_day, max(day) AS last_day,
                (SELECT count(*) FROM group_versions JOIN crash_groups ON crash_groups.id = group_versions.group_id
                    WHERE crash_groups.project_id = \(projectID)
                    AND group_versions.app_version = release_sessions.app_version
                    AND group_versions.count > 0) AS groups
            FROM release_sessions WHERE project_id = \(projectID)\(filter)
            GROUP BY app_version ORDER BY max(day) DESC, app_version DESC LIMIT \(page.limit) OFFSET \(page.offset)
            """
    }

    static func health(_ row: SQLRow) throws -> ReleaseHealth {
        let (clean, crashed, hung, killed): (Int, Int, Int, Int) = (
            try row.decode("clean"), try row.decode("crashed"), try row.decode("hung"), try row.decode("killed")
        )
        let sessions = clean + crashed + hung + killed
        return ReleaseHealth(
            version: try row.decode("app_version"), sessions: sessions, clean: clean, crashed: crashed, hung: hung,
            killed: killed, crashFreeRate: sessions == 0 ? 1 : Double(clean) / Double(sessions),
            requests: RequestCounts(
                total: try row.decode("requests"), serverErrors: try row.decode("request_errors"),
                crashed: try row.decode("crashed_requests")),
            groups: try row.decode("groups"),
            firstDay: Date(timeIntervalSince1970: Double(try row.decode("first_day", as: Int64.self)) * 86_400),
            lastDay: Date(timeIntervalSince1970: Double(try row.decode("last_day", as: Int64.self)) * 86_400))
    }

    static func day(_ date: Date) -> Int64 { Int64((date.timeIntervalSince1970 / 86_400).rounded(.down)) }
}
