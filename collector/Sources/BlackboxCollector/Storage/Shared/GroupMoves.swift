import Foundation

/// A report's move to the group of another signature (symbolication named its frames, or the
/// signature's version changed), and a whole group's move into another.
enum GroupMoves {
    /// Moves one report: counted off its old group, counted in the new one (created when new), and
    /// recorded in `group_moves` so that the old group's page can say where its occurrences went.
    static func move(
        _ report: RegroupedReport, from oldGroup: Int64, projectID: Int64, _ connection: some SQLConnection
    ) throws {
        let (newGroup, _) = try IngestTransaction.group(
            for: report.signature, kind: report.kind, occurredAt: report.occurredAt, projectID: projectID, connection)
        try connection.execute("UPDATE reports SET group_id = \(newGroup) WHERE id = \(report.id)")
        try uncount(versionKey: report.versionKey, hostKey: report.hostKey, from: oldGroup, connection)
        try IngestTransaction.count(
            reportID: report.id, occurredAt: report.occurredAt, versionKey: report.versionKey,
            hostKey: report.hostKey, in: newGroup, connection)
        try recordMove(from: oldGroup, to: newGroup, count: 1, connection)
    }

    /// Moves every occurrence of `groupID` into `target`: the reports, the count (with occurrences
    /// retention has deleted), first and last seen, the version and host tallies. The emptied group
    /// keeps its triage and history and is listed no more.
    static func merge(_ groupID: Int64, into target: Int64, _ connection: some SQLConnection) throws {
        guard
            let merged = try connection.row(
                "SELECT count, first_seen, last_seen FROM crash_groups WHERE id = \(groupID)")
        else { return }
        let (count, firstSeen, lastSeen): (Int, Date, Date) = (
            try merged.decode("count"), try merged.decode("first_seen"), try merged.decode("last_seen")
        )
        try connection.execute("UPDATE reports SET group_id = \(target) WHERE group_id = \(groupID)")
        try connection.execute(
            """
            UPDATE crash_groups SET count = count + \(count),
                first_seen = \(.least)(first_seen, \(firstSeen)), last_seen = \(.greatest)(last_seen, \(lastSeen)),
                latest_report_id = (SELECT id FROM reports WHERE group_id = \(target)
                    ORDER BY occurred_at DESC, id DESC LIMIT 1)
            WHERE id = \(target)
            """)
        for (table, column) in [("group_versions", "app_version"), ("group_hosts", "host")] {
            try connection.execute(
                """
                INSERT INTO \(unsafeSQL: table) (group_id, \(unsafeSQL: column), count)
                SELECT \(target), \(unsafeSQL: column), count FROM \(unsafeSQL: table) WHERE group_id = \(groupID)
                ON CONFLICT (group_id, \(unsafeSQL: column)) DO UPDATE SET count = \(unsafeSQL: table).count + excluded.count
                """)
            try connection.execute("DELETE FROM \(unsafeSQL: table) WHERE group_id = \(groupID)")
        }
        try connection.execute("UPDATE crash_groups SET count = 0, latest_report_id = NULL WHERE id = \(groupID)")
        try recordMove(from: groupID, to: target, count: max(count, 1), connection)
    }

    private static func recordMove(
        from oldGroup: Int64, to newGroup: Int64, count: Int, _ connection: some SQLConnection
    )
        throws
    {
        try connection.execute(
            """
            INSERT INTO group_moves (from_group_id, to_group_id, count, last_moved_at)
            VALUES (\(oldGroup), \(newGroup), \(count), \(Date()))
            ON CONFLICT (from_group_id, to_group_id) DO UPDATE SET count = group_moves.count + excluded.count,
                last_moved_at = excluded.last_moved_at
            """)
    }

    /// Takes one occurrence, which has moved to another group, off a group's count and tallies (the
    /// version and host were counted by name, or under `other` when they were not tracked). First and
    /// last seen stay: they say when the group was seen, and retention may have taken older reports.
    static func uncount(
        versionKey version: String, hostKey host: String, from groupID: Int64,
        _ connection: some SQLConnection
    ) throws {
        let other = CrashGroup.otherValues
        try connection.execute(
            """
            UPDATE crash_groups SET count = count - 1,
                latest_report_id = (SELECT id FROM reports WHERE group_id = crash_groups.id
                    ORDER BY occurred_at DESC, id DESC LIMIT 1)
            WHERE id = \(groupID)
            """)
        try connection.execute(
            """
            UPDATE group_versions SET count = count - 1 WHERE group_id = \(groupID) AND app_version = CASE
                WHEN EXISTS (SELECT 1 FROM group_versions WHERE group_id = \(groupID) AND app_version = \(version))
                THEN \(version) ELSE \(other) END
            """)
        try connection.execute(
            """
            UPDATE group_hosts SET count = count - 1 WHERE group_id = \(groupID) AND host = CASE
                WHEN EXISTS (SELECT 1 FROM group_hosts WHERE group_id = \(groupID) AND host = \(host))
                THEN \(host) ELSE \(other) END
            """)
    }
}
