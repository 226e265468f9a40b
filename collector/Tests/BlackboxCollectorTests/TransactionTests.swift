import BlackboxFormat
import Foundation
import Testing

@testable import BlackboxCollector

/// The store transactions without a database: a scripted connection answers each statement from the
/// test's script and records what ran, so the races only several PostgreSQL instances can make (a
/// conflict between a check and an insert) are tested directly, and in both dialects.
@Suite("Store transactions, with a scripted connection")
struct TransactionTests {
    final class ScriptedConnection: SQLConnection {
        let dialect: SQLDialect
        /// The rows for a statement (its rendered text, trimmed), asked in the order statements run.
        let answer: (String) -> [SQLRow]
        private(set) var ran: [(sql: String, values: [SQLValue])] = []

        init(_ dialect: SQLDialect, answer: @escaping (String) -> [SQLRow]) {
            self.dialect = dialect
            self.answer = answer
        }

        func rows(_ statement: SQLStatement) throws -> [SQLRow] {
            let rendered = statement.rendered(for: dialect)
            let sql = rendered.sql.trimmingCharacters(in: .whitespacesAndNewlines)
            ran.append((sql, rendered.values))
            return answer(sql)
        }

        func execute(_ statement: SQLStatement) throws -> Int { try rows(statement).count }

        func ran(_ prefix: String) -> [[SQLValue]] { ran.filter { $0.sql.hasPrefix(prefix) }.map(\.values) }
    }

    static func row(_ columns: [String: SQLValue]) -> SQLRow {
        let names = columns.keys.sorted()
        return SQLRow(columns: names, values: names.map { columns[$0]! })
    }

    static let bundle = row([
        "id": .integer(7), "project_id": .integer(1), "upload_id": .text("u"), "sha256": .text("s"),
        "size": .integer(10),
        "blob": .text("b"), "app_name": .null, "app_version": .null, "host": .null, "has_manifest": .bool(false),
        "received_at": .real(1_800_000_000), "file_count": .integer(1), "report_count": .integer(1),
    ])

    static func plan(version: String = "1.0") throws -> IngestPlan {
        try IngestPlan(
            NewBundle(
                projectID: 1, uploadID: "u", sha256: "s", size: 10, blob: "b", manifest: nil,
                files: [InspectedFile(path: "reports/r.json", kind: .report, size: 10, sha256: "r")],
                reports: [Reports.crash(functions: ["shop.pay() -> ()"], version: version)], receivedAt: Date()),
            bounds: IngestBounds(IngestLimits()))
    }

    @Test(
        "a bundle another instance stored between the check and the insert is answered as the duplicate it is",
        arguments: [SQLDialect.sqlite, .postgres])
    func bundleInsertLosesTheRace(_ dialect: SQLDialect) throws {
        var lookups = 0
        let connection = ScriptedConnection(dialect) { sql in
            if sql.hasPrefix("SELECT * FROM bundles") {
                lookups += 1
                return lookups == 1 ? [] : [Self.bundle]  // not there at the check; there after the conflict
            }
            return []  // the insert conflicted: no row back
        }
        guard case .duplicate(let record) = try IngestTransaction.apply(Self.plan(), in: connection) else {
            Issue.record("not answered as a duplicate")
            return
        }
        #expect(record.id == 7)
        #expect(connection.ran("INSERT INTO bundle_files").isEmpty && connection.ran("INSERT INTO reports").isEmpty)
    }

    @Test("a report another instance stored first leaves no zero-count group behind and counts nothing")
    func reportInsertLosesTheRace() throws {
        let connection = ScriptedConnection(.postgres) { sql in
            if sql.hasPrefix("INSERT INTO bundles") { return [Self.bundle] }
            if sql.hasPrefix("INSERT INTO crash_groups") { return [Self.row(["id": .integer(5)])] }  // created
            return []  // not seen at the check, then the report's insert conflicts
        }
        guard case .stored = try IngestTransaction.apply(Self.plan(), in: connection) else {
            Issue.record("the bundle itself was new")
            return
        }
        #expect(connection.ran("DELETE FROM crash_groups") == [[.integer(5)]], "the group made for it goes")
        #expect(connection.ran("UPDATE crash_groups SET count").isEmpty && connection.ran("INSERT INTO alert").isEmpty)
    }

    /// An ingest whose new report lands in group 5, counted there as its 4th occurrence, resolved in 1.2.
    static func ingestIntoResolvedGroup() -> ScriptedConnection {
        ScriptedConnection(.sqlite) { sql in
            if sql.hasPrefix("INSERT INTO bundles") { return [Self.bundle] }
            if sql.hasPrefix("INSERT INTO crash_groups") { return [Self.row(["id": .integer(5)])] }
            if sql.hasPrefix("INSERT INTO reports") { return [Self.row(["id": .integer(11)])] }
            if sql.hasPrefix("UPDATE crash_groups SET count") {
                return [
                    Self.row([
                        "count": .integer(4), "state": .text("resolved"), "resolved_in": .text("1.2"),
                        "resolved_after": .null, "ignored_until_count": .null, "ignored_until": .null,
                        "state_changed_at": .real(1_700_000_000),
                    ])
                ]
            }
            return []
        }
    }

    @Test("an occurrence in a version past the fix regresses its resolved group, in the same transaction")
    func regressionDuringIngest() throws {
        let connection = Self.ingestIntoResolvedGroup()
        _ = try IngestTransaction.apply(Self.plan(version: "1.3"), in: connection)
        let update = try #require(connection.ran("UPDATE crash_groups SET state").first)
        #expect(update.first == .text("regressed"), "\(update)")
        #expect(connection.ran("INSERT INTO group_history").first?.contains(.text("regressed")) == true)
        // In 1.1, before the fix: stays resolved, nothing written.
        let before = Self.ingestIntoResolvedGroup()
        _ = try IngestTransaction.apply(Self.plan(version: "1.1"), in: before)
        #expect(before.ran("UPDATE crash_groups SET state").isEmpty)
    }

    @Test("a status change locks the group's row on PostgreSQL and records its history")
    func statusChange() throws {
        let connection = ScriptedConnection(.postgres) { sql in
            if sql.hasPrefix("SELECT count,") {
                return [
                    Self.row([
                        "count": .integer(2), "state": .text("open"), "resolved_in": .null, "resolved_after": .null,
                        "ignored_until_count": .null, "ignored_until": .null, "state_changed_at": .null,
                    ])
                ]
            }
            return []
        }
        let changed = try TriageTransaction.change(
            groupID: 5, in: ProjectScope(projectID: 1), to: .resolved(in: nil), actor: "ann", at: Date(), connection)
        #expect(changed)
        #expect(connection.ran.first?.sql.hasSuffix("FOR UPDATE") == true, "\(connection.ran.first?.sql ?? "")")
        #expect(connection.ran("UPDATE crash_groups SET state").first?.first == .text("resolved"))
        #expect(connection.ran("INSERT INTO group_history").count == 1)
        let missing = ScriptedConnection(.postgres) { _ in [] }
        #expect(
            try !TriageTransaction.change(
                groupID: 6, in: ProjectScope(projectID: 1), to: .resolved(in: nil), actor: "ann", at: Date(), missing))
        #expect(missing.ran.count == 1, "nothing written for a group not found")
    }
}
