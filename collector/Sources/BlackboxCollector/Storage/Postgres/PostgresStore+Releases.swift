import Foundation
import Logging
import PostgresNIO

/// `ReleaseStore`, and adding a plan's session counts during ingest.
extension PostgresStore {
    public func releases(in scope: ProjectScope, page: Page) async throws -> [ReleaseHealth] {
        try await read(
            Self.query(ReleaseSQL.releases(projectID: scope.projectID, version: nil, page: page)), Self.health)
    }

    public func release(version: String, in scope: ProjectScope) async throws -> ReleaseHealth? {
        try await read(
            Self.query(ReleaseSQL.releases(projectID: scope.projectID, version: version, page: Page(limit: 1))),
            Self.health
        ).first
    }

    public func releaseDays(version: String, in scope: ProjectScope, since: Date, days: Int) async throws
        -> (sessions: [Int], clean: [Int])
    {
        let firstDay = ReleaseSQL.day(since)
        let rows = try await read(
            Self.query(ReleaseSQL.days(projectID: scope.projectID, version: version, firstDay: firstDay, days: days))
        ) {
            (
                try $0["day"].decode(Int64.self), Int(try $0["sessions"].decode(Int64.self)),
                Int(try $0["clean"].decode(Int64.self))
            )
        }
        var sessions = Array(repeating: 0, count: days)
        var clean = Array(repeating: 0, count: days)
        for (day, count, cleanCount) in rows {
            let index = Int(day - firstDay)
            guard sessions.indices.contains(index) else { continue }
            sessions[index] = count
            clean[index] = cleanCount
        }
        return (sessions, clean)
    }

    static func health(_ row: PostgresRandomAccessRow) throws -> ReleaseHealth {
        ReleaseSQL.health(
            version: try row["app_version"].decode(String.self), clean: try row["clean"].decode(Int64.self),
            crashed: try row["crashed"].decode(Int64.self), hung: try row["hung"].decode(Int64.self),
            killed: try row["killed"].decode(Int64.self), firstDay: try row["first_day"].decode(Int64.self),
            lastDay: try row["last_day"].decode(Int64.self), groups: try row["groups"].decode(Int64.self))
    }

    /// Adds the plan's session counts (in the ingest transaction, only for a bundle stored now).
    static func addSessions(_ plan: IngestPlan, _ connection: PostgresConnection, _ logger: Logger) async throws {
        for row in plan.sessions {
            try await connection.query(
                query(
                    ReleaseSQL.add(row, projectID: plan.bundle.projectID, day: ReleaseSQL.day(plan.bundle.receivedAt))),
                logger: logger)
        }
    }

    static func query(_ statement: (String, [GroupQuerySQL.Argument])) -> PostgresQuery {
        var bindings = PostgresBindings()
        for argument in statement.1 {
            switch argument {
            case .integer(let value): bindings.append(value)
            case .text(let value): bindings.append(value)
            case .real(let value): bindings.append(value)
            }
        }
        return PostgresQuery(unsafeSQL: GroupQuerySQL.numbered(statement.0), binds: bindings)
    }
}
