import Foundation
import Logging
import PostgresNIO

/// `TriageStore`, and the status check ingest makes after counting an occurrence. The group's row is
/// locked (`FOR UPDATE`, or by the count's `UPDATE`) before its status is read, so two instances
/// deciding about one group decide one after the other.
extension PostgresStore {
    public func changeStatus(
        groupID: Int64, in scope: ProjectScope, to request: StatusRequest, actor: String, at now: Date
    ) async throws -> CrashGroup? {
        let changed = try await transaction { connection, logger -> Bool in
            guard
                let (count, status) = try await Self.rows(
                    connection,
                    """
                    SELECT count, state, resolved_in, resolved_after, ignored_until_count, ignored_until,
                        state_changed_at
                    FROM crash_groups WHERE id = \(groupID) AND project_id = \(scope.projectID) FOR UPDATE
                    """, logger: logger, { (Int(try $0["count"].decode(Int64.self)), try Self.status($0)) }
                ).first
            else { return false }
            let versions = try await Self.rows(
                connection,
                """
                SELECT app_version FROM group_versions
                WHERE group_id = \(groupID) AND app_version <> 'unknown' AND app_version <> \(CrashGroup.otherValues)
                """, logger: logger, { try $0["app_version"].decode(String.self) })
            var asked = versions
            if case .resolved(let version?) = request { asked.append(version) }
            let facts = GroupTriage.Facts(
                count: count, versions: versions,
                order: try await Self.versionOrder(asked, projectID: scope.projectID, connection, logger))
            if let decision = GroupTriage.apply(request, to: status, facts: facts, actor: actor, at: now) {
                try await Self.write(decision, groupID: groupID, connection, logger)
            }
            return true
        }
        return changed ? try await group(id: groupID, in: scope) : nil
    }

    public func statusHistory(groupID: Int64, in scope: ProjectScope) async throws -> [GroupStatusChange] {
        try await read(
            """
            SELECT group_history.* FROM group_history JOIN crash_groups ON crash_groups.id = group_history.group_id
            WHERE group_history.group_id = \(groupID) AND crash_groups.project_id = \(scope.projectID)
            ORDER BY group_history.id
            """
        ) { row in
            GroupStatusChange(
                at: Date(timeIntervalSince1970: try row["at"].decode(Double.self)),
                actor: try row["actor"].decode(String.self),
                from: GroupStatus.State(rawValue: try row["from_state"].decode(String.self)) ?? .open,
                to: GroupStatus.State(rawValue: try row["to_state"].decode(String.self)) ?? .open,
                detail: try row["detail"].decode(String?.self))
        }
    }

    // MARK: during ingest

    static func recordVersion(
        _ version: String?, projectID: Int64, at now: Date, _ connection: PostgresConnection, _ logger: Logger
    ) async throws {
        guard let version else { return }
        try await connection.query(
            """
            INSERT INTO app_versions (project_id, version, first_seen)
            VALUES (\(projectID), \(version), \(now.timeIntervalSince1970)) ON CONFLICT DO NOTHING
            """, logger: logger)
    }

    /// After an occurrence was counted (`count` and `status`: the group's, read under the count's row
    /// lock): an ignored group may reopen, a resolved one regress.
    /// Returns when the group regressed, if it did.
    @discardableResult
    static func triage(
        _ occurrence: IngestPlan.OccurrenceRow, count: Int, status: GroupStatus, groupID: Int64, projectID: Int64,
        at now: Date, _ connection: PostgresConnection, _ logger: Logger
    ) async throws -> Date? {
        guard status.state == .resolved || status.state == .ignored else { return nil }
        let versions = [occurrence.appVersion, status.resolvedIn, status.resolvedAfter].compactMap { $0 }
        guard
            let decision = GroupTriage.afterOccurrence(
                status, version: occurrence.appVersion, countAfter: count,
                order: try await versionOrder(versions, projectID: projectID, connection, logger), at: now)
        else { return nil }
        try await write(decision, groupID: groupID, connection, logger)
        return decision.status.state == .regressed ? decision.status.changedAt : nil
    }

    // MARK: helpers

    static func status(_ row: PostgresRandomAccessRow) throws -> GroupStatus {
        var status = GroupStatus()
        status.state = GroupStatus.State(rawValue: try row["state"].decode(String.self)) ?? .open
        status.resolvedIn = try row["resolved_in"].decode(String?.self)
        status.resolvedAfter = try row["resolved_after"].decode(String?.self)
        status.ignoredUntilCount = try row["ignored_until_count"].decode(Int64?.self).map(Int.init)
        status.ignoredUntil = try row["ignored_until"].decode(Double?.self).map(Date.init(timeIntervalSince1970:))
        status.changedAt = try row["state_changed_at"].decode(Double?.self).map(Date.init(timeIntervalSince1970:))
        return status
    }

    static func write(
        _ decision: GroupTriage.Decision, groupID: Int64, _ connection: PostgresConnection, _ logger: Logger
    ) async throws {
        let status = decision.status
        let change = decision.change
        try await connection.query(
            """
            UPDATE crash_groups SET state = \(status.state.rawValue), resolved_in = \(status.resolvedIn),
                resolved_after = \(status.resolvedAfter), ignored_until_count = \(status.ignoredUntilCount.map(Int64.init)),
                ignored_until = \(status.ignoredUntil?.timeIntervalSince1970),
                state_changed_at = \(status.changedAt?.timeIntervalSince1970)
            WHERE id = \(groupID)
            """, logger: logger)
        try await connection.query(
            """
            INSERT INTO group_history (group_id, at, actor, from_state, to_state, detail)
            VALUES (\(groupID), \(change.at.timeIntervalSince1970), \(change.actor), \(change.from.rawValue),
                \(change.to.rawValue), \(change.detail))
            """, logger: logger)
    }

    /// A `VersionOrder` knowing when the project first saw each of `versions` that is not a semantic version.
    static func versionOrder(
        _ versions: [String], projectID: Int64, _ connection: PostgresConnection, _ logger: Logger
    ) async throws -> VersionOrder {
        let needed = Array(Set(versions.filter { SemanticVersion($0) == nil }))
        var seen: [String: Date] = [:]
        if !needed.isEmpty {
            for (version, first) in try await rows(
                connection,
                "SELECT version, first_seen FROM app_versions WHERE project_id = \(projectID) AND version = ANY(\(needed))",
                logger: logger,
                { (try $0["version"].decode(String.self), try $0["first_seen"].decode(Double.self)) })
            {
                seen[version] = Date(timeIntervalSince1970: first)
            }
        }
        return VersionOrder(firstSeen: { seen[$0] })
    }
}
