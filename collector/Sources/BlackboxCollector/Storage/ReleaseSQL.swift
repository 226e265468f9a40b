import Foundation

/// The release-health statements both stores run, with `?` placeholders (PostgreSQL numbers them:
/// `GroupQuerySQL.numbered`), so that counting and reading cannot drift between them.
enum ReleaseSQL {
    typealias Argument = GroupQuerySQL.Argument

    /// Adds a plan's session counts to the day it arrived. A version the project has rows for is
    /// counted by name; a new one too, unless `ReleaseHealth.maxVersions` versions had runs since
    /// yesterday: then it is counted under "(other)". Only recent versions count against the cap, and
    /// retention deletes days past the retention period, so versions made up by someone holding the
    /// (public) ingest key crowd real ones out only while they keep sending them, never for good.
    static func add(_ row: IngestPlan.SessionRow, projectID: Int64, day: Int64) -> (String, [Argument]) {
        (
            """
            INSERT INTO release_sessions (project_id, app_version, day, clean, crashed, hung, killed)
            SELECT ?, CASE WHEN EXISTS (SELECT 1 FROM release_sessions WHERE project_id = ? AND app_version = ?)
                    OR (SELECT count(DISTINCT app_version) FROM release_sessions
                        WHERE project_id = ? AND day >= ?) < ?
                THEN ? ELSE ? END, ?, ?, ?, ?, ?
            WHERE true
            ON CONFLICT (project_id, app_version, day) DO UPDATE SET clean = release_sessions.clean + excluded.clean,
                crashed = release_sessions.crashed + excluded.crashed, hung = release_sessions.hung + excluded.hung,
                killed = release_sessions.killed + excluded.killed
            """,
            [
                .integer(projectID), .integer(projectID), .text(row.versionKey), .integer(projectID), .integer(day - 1),
                .integer(Int64(ReleaseHealth.maxVersions)), .text(row.versionKey), .text(CrashGroup.otherValues),
                .integer(day), .integer(Int64(row.clean)), .integer(Int64(row.crashed)), .integer(Int64(row.hung)),
                .integer(Int64(row.killed)),
            ]
        )
    }

    /// Per version: summed counts, first and last day, and how many groups were seen in it.
    static func releases(projectID: Int64, version: String?, page: Page) -> (String, [Argument]) {
        var arguments: [Argument] = [.integer(projectID), .integer(projectID)]
        var filter = ""
        if let version {
            filter = " AND app_version = ?"
            arguments.append(.text(version))
        }
        arguments += [.integer(Int64(page.limit)), .integer(Int64(page.offset))]
        return (
            """
            SELECT app_version, CAST(sum(clean) AS BIGINT) AS clean, CAST(sum(crashed) AS BIGINT) AS crashed,
                CAST(sum(hung) AS BIGINT) AS hung, CAST(sum(killed) AS BIGINT) AS killed,
                min(day) AS first_day, max(day) AS last_day,
                (SELECT count(*) FROM group_versions JOIN crash_groups ON crash_groups.id = group_versions.group_id
                    WHERE crash_groups.project_id = ? AND group_versions.app_version = release_sessions.app_version
                    AND group_versions.count > 0) AS groups
            FROM release_sessions WHERE project_id = ?\(filter)
            GROUP BY app_version ORDER BY max(day) DESC, app_version DESC LIMIT ? OFFSET ?
            """,
            arguments
        )
    }

    static func days(projectID: Int64, version: String, firstDay: Int64, days: Int) -> (String, [Argument]) {
        (
            """
            SELECT day, CAST(sum(clean + crashed + hung + killed) AS BIGINT) AS sessions,
                CAST(sum(clean) AS BIGINT) AS clean
            FROM release_sessions WHERE project_id = ? AND app_version = ? AND day >= ? AND day < ?
            GROUP BY day
            """,
            [.integer(projectID), .text(version), .integer(firstDay), .integer(firstDay + Int64(days))]
        )
    }

    /// A row of `releases` as the record, given how to read a column.
    static func health(
        version: String, clean: Int64, crashed: Int64, hung: Int64, killed: Int64, firstDay: Int64, lastDay: Int64,
        groups: Int64
    ) -> ReleaseHealth {
        let sessions = Int(clean + crashed + hung + killed)
        return ReleaseHealth(
            version: version, sessions: sessions, clean: Int(clean), crashed: Int(crashed), hung: Int(hung),
            killed: Int(killed), crashFreeRate: sessions == 0 ? 1 : Double(clean) / Double(sessions),
            groups: Int(groups), firstDay: Date(timeIntervalSince1970: Double(firstDay) * 86_400),
            lastDay: Date(timeIntervalSince1970: Double(lastDay) * 86_400))
    }

    static func day(_ date: Date) -> Int64 { Int64((date.timeIntervalSince1970 / 86_400).rounded(.down)) }
}
