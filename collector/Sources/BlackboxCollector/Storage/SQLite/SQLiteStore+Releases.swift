import Foundation
import GRDB

/// `ReleaseStore`, and adding a plan's session counts during ingest.
extension SQLiteStore {
    public func releases(in scope: ProjectScope, page: Page) async throws -> [ReleaseHealth] {
        try await releases(ReleaseSQL.releases(projectID: scope.projectID, version: nil, page: page))
    }

    public func release(version: String, in scope: ProjectScope) async throws -> ReleaseHealth? {
        try await releases(ReleaseSQL.releases(projectID: scope.projectID, version: version, page: Page(limit: 1)))
            .first
    }

    public func releaseDays(version: String, in scope: ProjectScope, since: Date, days: Int) async throws
        -> (sessions: [Int], clean: [Int])
    {
        let firstDay = ReleaseSQL.day(since)
        let (sql, arguments) = ReleaseSQL.days(
            projectID: scope.projectID, version: version, firstDay: firstDay, days: days)
        let values = Self.values(arguments)
        return try await pool.read { db in
            var sessions = Array(repeating: 0, count: days)
            var clean = Array(repeating: 0, count: days)
            for row in try Row.fetchAll(db, sql: sql, arguments: StatementArguments(values)) {
                let index = Int((row["day"] as Int64) - firstDay)
                guard sessions.indices.contains(index) else { continue }
                sessions[index] = row["sessions"]
                clean[index] = row["clean"]
            }
            return (sessions, clean)
        }
    }

    private func releases(_ statement: (String, [GroupQuerySQL.Argument])) async throws -> [ReleaseHealth] {
        let values = Self.values(statement.1)
        return try await pool.read { db in
            try Row.fetchAll(db, sql: statement.0, arguments: StatementArguments(values)).map { row in
                ReleaseSQL.health(
                    version: row["app_version"], clean: row["clean"], crashed: row["crashed"], hung: row["hung"],
                    killed: row["killed"], firstDay: row["first_day"], lastDay: row["last_day"], groups: row["groups"])
            }
        }
    }

    /// Adds the plan's session counts (in the ingest transaction, only for a bundle stored now).
    static func addSessions(_ plan: IngestPlan, in db: Database) throws {
        for row in plan.sessions {
            let (sql, arguments) = ReleaseSQL.add(
                row, projectID: plan.bundle.projectID, day: ReleaseSQL.day(plan.bundle.receivedAt))
            try db.execute(sql: sql, arguments: StatementArguments(values(arguments)))
        }
    }

    static func values(_ arguments: [GroupQuerySQL.Argument]) -> [DatabaseValue] {
        arguments.map { argument in
            switch argument {
            case .integer(let value): value.databaseValue
            case .text(let value): value.databaseValue
            case .real(let value): value.databaseValue
            }
        }
    }
}
