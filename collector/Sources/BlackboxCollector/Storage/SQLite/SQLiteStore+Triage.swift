import Foundation
import GRDB

/// `TriageStore`, and the status check ingest makes after counting an occurrence.
extension SQLiteStore {
    public func changeStatus(
        groupID: Int64, in scope: ProjectScope, to request: StatusRequest, actor: String, at now: Date
    ) async throws -> CrashGroup? {
        try await pool.write { db in
            guard
                let row = try Row.fetchOne(
                    db, sql: "SELECT count, \(Self.statusColumns) FROM crash_groups WHERE id = ? AND project_id = ?",
                    arguments: [groupID, scope.projectID])
            else { return nil }
            let versions = try String.fetchAll(
                db, sql: "SELECT app_version FROM group_versions WHERE group_id = ? AND app_version NOT IN (?, ?)",
                arguments: [groupID, "unknown", CrashGroup.otherValues])
            var asked = versions
            if case .resolved(let version?) = request { asked.append(version) }
            let facts = GroupTriage.Facts(
                count: row["count"], versions: versions,
                order: try Self.versionOrder(asked, projectID: scope.projectID, in: db))
            if let decision = GroupTriage.apply(request, to: Self.status(row), facts: facts, actor: actor, at: now) {
                try Self.write(decision, groupID: groupID, in: db)
            }
            return try Self.groups(
                Row.fetchAll(db, sql: "SELECT * FROM crash_groups WHERE id = ?", arguments: [groupID]), in: db
            ).first
        }
    }

    public func statusHistory(groupID: Int64, in scope: ProjectScope) async throws -> [GroupStatusChange] {
        try await pool.read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT group_history.* FROM group_history JOIN crash_groups ON crash_groups.id = group_history.group_id
                    WHERE group_history.group_id = ? AND crash_groups.project_id = ? ORDER BY group_history.id
                    """,
                arguments: [groupID, scope.projectID]
            ).map { row in
                GroupStatusChange(
                    at: Date(timeIntervalSince1970: row["at"]), actor: row["actor"],
                    from: GroupStatus.State(rawValue: row["from_state"]) ?? .open,
                    to: GroupStatus.State(rawValue: row["to_state"]) ?? .open, detail: row["detail"])
            }
        }
    }

    // MARK: during ingest

    static let statusColumns =
        "state, resolved_in, resolved_after, ignored_until_count, ignored_until, state_changed_at"

    /// Remembers when the project first saw `version` (the order of versions that do not parse).
    static func recordVersion(_ version: String?, projectID: Int64, at now: Date, in db: Database) throws {
        guard let version else { return }
        try db.executeCached(
            sql: "INSERT INTO app_versions (project_id, version, first_seen) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
            arguments: [projectID, version, now.timeIntervalSince1970])
    }

    /// After an occurrence was counted (`counted`: the group's count and status columns): an ignored
    /// group may reopen, a resolved one regress. Returns when it regressed, if it did.
    @discardableResult
    static func triage(
        _ occurrence: IngestPlan.OccurrenceRow, counted: Row, groupID: Int64, projectID: Int64, at now: Date,
        in db: Database
    ) throws -> Date? {
        let status = status(counted)
        guard status.state == .resolved || status.state == .ignored else { return nil }
        let versions = [occurrence.appVersion, status.resolvedIn, status.resolvedAfter].compactMap { $0 }
        guard
            let decision = GroupTriage.afterOccurrence(
                status, version: occurrence.appVersion, countAfter: counted["count"],
                order: try versionOrder(versions, projectID: projectID, in: db), at: now)
        else { return nil }
        try write(decision, groupID: groupID, in: db)
        return decision.status.state == .regressed ? decision.status.changedAt : nil
    }

    // MARK: helpers

    static func status(_ row: Row) -> GroupStatus {
        var status = GroupStatus()
        status.state = GroupStatus.State(rawValue: row["state"]) ?? .open
        status.resolvedIn = row["resolved_in"]
        status.resolvedAfter = row["resolved_after"]
        status.ignoredUntilCount = row["ignored_until_count"]
        status.ignoredUntil = (row["ignored_until"] as Double?).map(Date.init(timeIntervalSince1970:))
        status.changedAt = (row["state_changed_at"] as Double?).map(Date.init(timeIntervalSince1970:))
        return status
    }

    static func write(_ decision: GroupTriage.Decision, groupID: Int64, in db: Database) throws {
        let status = decision.status
        let change = decision.change
        try db.executeCached(
            sql: """
                UPDATE crash_groups SET state = ?, resolved_in = ?, resolved_after = ?, ignored_until_count = ?,
                    ignored_until = ?, state_changed_at = ?
                WHERE id = ?
                """,
            arguments: [
                status.state.rawValue, status.resolvedIn, status.resolvedAfter, status.ignoredUntilCount,
                status.ignoredUntil?.timeIntervalSince1970, status.changedAt?.timeIntervalSince1970, groupID,
            ])
        try db.executeCached(
            sql:
                "INSERT INTO group_history (group_id, at, actor, from_state, to_state, detail) VALUES (?, ?, ?, ?, ?, ?)",
            arguments: [
                groupID, change.at.timeIntervalSince1970, change.actor, change.from.rawValue, change.to.rawValue,
                change.detail,
            ])
    }

    /// A `VersionOrder` knowing when the project first saw each of `versions` that is not a semantic version.
    static func versionOrder(_ versions: [String], projectID: Int64, in db: Database) throws -> VersionOrder {
        let needed = Array(Set(versions.filter { SemanticVersion($0) == nil }))
        var seen: [String: Date] = [:]
        if !needed.isEmpty {
            for row in try Row.fetchAll(
                db,
                sql: """
                    SELECT version, first_seen FROM app_versions
                    WHERE project_id = ? AND version IN (\(databaseQuestionMarks(count: needed.count)))
                    """,
                arguments: StatementArguments([projectID] as [any DatabaseValueConvertible] + needed))
            {
                seen[row["version"]] = Date(timeIntervalSince1970: row["first_seen"])
            }
        }
        return VersionOrder(firstSeen: { seen[$0] })
    }
}
