import Foundation

/// `TriageStore`. The group's row is locked (`FOR UPDATE`, or by the count's `UPDATE` during ingest)
/// before its status is read, so two instances deciding about one group decide one after the other.
extension SQLDatabase {
    public func changeStatus(
        groupID: Int64, in scope: ProjectScope, to request: StatusRequest, actor: String, at now: Date
    ) async throws -> CrashGroup? {
        let changed = try await write { connection in
            try TriageTransaction.change(groupID: groupID, in: scope, to: request, actor: actor, at: now, connection)
        }
        return changed ? try await group(id: groupID, in: scope) : nil
    }

    public func statusHistory(groupID: Int64, in scope: ProjectScope) async throws -> [GroupStatusChange] {
        try await rows(
            """
            SELECT group_history.* FROM group_history JOIN crash_groups ON crash_groups.id = group_history.group_id
            WHERE group_history.group_id = \(groupID) AND crash_groups.project_id = \(scope.projectID)
            ORDER BY group_history.id
            """
        ).map(GroupStatusChange.init)
    }
}

/// Status decisions (`GroupTriage`) between their reads and writes.
enum TriageTransaction {
    /// A status change someone asked for; false when the project has no such group.
    static func change(
        groupID: Int64, in scope: ProjectScope, to request: StatusRequest, actor: String, at now: Date,
        _ connection: some SQLConnection
    ) throws -> Bool {
        guard
            let row = try connection.row(
                """
                SELECT count, \(GroupStatus.columns) FROM crash_groups
                WHERE id = \(groupID) AND project_id = \(scope.projectID)\(.forUpdate)
                """)
        else { return false }
        let versions = try connection.rows(
            """
            SELECT app_version FROM group_versions
            WHERE group_id = \(groupID) AND app_version NOT IN (\(TallyKey.unknown), \(CrashGroup.otherValues))
            """
        ) { try $0.decode("app_version", as: String.self) }
        var asked = versions
        if case .resolved(let version?) = request { asked.append(version) }
        let facts = GroupTriage.Facts(
            count: try row.decode("count"), versions: versions,
            order: try versionOrder(asked, projectID: scope.projectID, connection))
        if let decision = GroupTriage.apply(request, to: try GroupStatus(row: row), facts: facts, actor: actor, at: now)
        {
            try write(decision, groupID: groupID, connection)
        }
        return true
    }

    /// Remembers when the project first saw `version` (the order of versions that do not parse).
    static func recordVersion(_ version: String?, projectID: Int64, at now: Date, _ connection: some SQLConnection)
        throws
    {
        guard let version else { return }
        try connection.execute(
            """
            INSERT INTO app_versions (project_id, version, first_seen) VALUES (\(projectID), \(version), \(now))
            ON CONFLICT DO NOTHING
            """)
    }

    /// After an occurrence was counted (`count` and `status`: the group's, read under the count's row
    /// lock): an ignored group may reopen, a resolved one regress. Returns when it regressed, if it did.
    @discardableResult
    static func afterOccurrence(
        _ occurrence: IngestPlan.OccurrenceRow, count: Int, status: GroupStatus, groupID: Int64, projectID: Int64,
        at now: Date, _ connection: some SQLConnection
    ) throws -> Date? {
        guard status.state == .resolved || status.state == .ignored else { return nil }
        let versions = [occurrence.appVersion, status.resolvedIn, status.resolvedAfter].compactMap { $0 }
        guard
            let decision = GroupTriage.afterOccurrence(
                status, version: occurrence.appVersion, countAfter: count,
                order: try versionOrder(versions, projectID: projectID, connection), at: now)
        else { return nil }
        try write(decision, groupID: groupID, connection)
        return decision.status.state == .regressed ? decision.status.changedAt : nil
    }

    static func write(_ decision: GroupTriage.Decision, groupID: Int64, _ connection: some SQLConnection) throws {
        let status = decision.status
        let change = decision.change
        try connection.execute(
            """
            UPDATE crash_groups SET state = \(status.state.rawValue), resolved_in = \(status.resolvedIn),
                resolved_after = \(status.resolvedAfter), ignored_until_count = \(status.ignoredUntilCount),
                ignored_until = \(status.ignoredUntil), state_changed_at = \(status.changedAt)
            WHERE id = \(groupID)
            """)
        try connection.execute(
            """
            INSERT INTO group_history (group_id, at, actor, from_state, to_state, detail)
            VALUES (\(groupID), \(change.at), \(change.actor), \(change.from.rawValue), \(change.to.rawValue),
                \(change.detail))
            """)
    }

    /// A `VersionOrder` knowing when the project first saw each of `versions` that is not a semantic version.
    static func versionOrder(_ versions: [String], projectID: Int64, _ connection: some SQLConnection) throws
        -> VersionOrder
    {
        let needed = Array(Set(versions.filter { SemanticVersion($0) == nil })).sorted()
        var seen: [String: Date] = [:]
        if !needed.isEmpty {
            for row in try connection.rows(
                "SELECT version, first_seen FROM app_versions WHERE project_id = \(projectID) AND version IN (\(list: needed))"
            ) {
                seen[try row.decode("version")] = try row.decode("first_seen", as: Date.self)
            }
        }
        return VersionOrder(firstSeen: { seen[$0] })
    }
}
