import Foundation
import Testing

@testable import BlackboxCollector

@Suite("One statement for both stores: binding, dialects, rows")
struct SQLStatementTests {
    @Test("values are bound, never spliced; each dialect numbers its own placeholders")
    func binding() {
        let name = "x' OR '1'='1"
        let missing: Int? = nil
        let statement: SQLStatement =
            "SELECT * FROM t WHERE a = \(name) AND b LIKE '?' AND c = \(missing) AND d IN (\(list: [1, 2]))"
        let sqlite = statement.rendered(for: .sqlite)
        #expect(sqlite.sql == "SELECT * FROM t WHERE a = ? AND b LIKE '?' AND c = ? AND d IN (?, ?)")
        #expect(sqlite.values == [.text(name), .null, .integer(1), .integer(2)])
        let postgres = statement.rendered(for: .postgres)
        #expect(postgres.sql == "SELECT * FROM t WHERE a = $1 AND b LIKE '?' AND c = $2 AND d IN ($3, $4)")
        #expect(postgres.values == sqlite.values)
    }

    @Test("an empty list matches nothing; fragments keep their values in order")
    func fragments() {
        let empty: [String] = []
        #expect(SQLStatement("x IN (\(list: empty))").rendered(for: .postgres).sql == "x IN (NULL)")
        let conditions: [SQLStatement] = ["a = \(1)", "b = \(2)"]
        let joined: SQLStatement = "SELECT 1 WHERE \(conditions.joined(separator: " AND ")) LIMIT \(3)"
        let rendered = joined.rendered(for: .postgres)
        #expect(rendered.sql == "SELECT 1 WHERE a = $1 AND b = $2 LIMIT $3")
        #expect(rendered.values == [.integer(1), .integer(2), .integer(3)])
    }

    @Test("dialect tokens: what differs is said once")
    func tokens() {
        let day = "2026-11-26"
        let statement: SQLStatement =
            "SELECT \(.least)(a, b), \(.greatest)(a, b), CAST(\(.floor)(c) AS BIGINT) FROM t WHERE d = \(day)\(.cast(.date))\(.forUpdate)"
        #expect(
            statement.rendered(for: .sqlite).sql
                == "SELECT min(a, b), max(a, b), CAST((c) AS BIGINT) FROM t WHERE d = ?")
        #expect(
            statement.rendered(for: .postgres).sql
                == "SELECT LEAST(a, b), GREATEST(a, b), CAST(floor(c) AS BIGINT) FROM t WHERE d = $1::date FOR UPDATE")
    }

    @Test("rows decode leniently across storage classes, and strictly across meanings")
    func rows() throws {
        let row = SQLRow(
            columns: ["flag", "count", "at", "name", "none"],
            values: [.integer(1), .real(3), .integer(1_800_000_000), .text("a"), .null])
        #expect(try row.decode("flag", as: Bool.self) == true, "SQLite keeps booleans as 0/1")
        #expect(try row.decode("count", as: Int.self) == 3)
        #expect(try row.decode("at", as: Date.self) == Date(timeIntervalSince1970: 1_800_000_000))
        #expect(try row.decode("none", as: String?.self) == nil)
        #expect(try row.decode("name", as: String?.self) == "a")
        #expect(throws: SQLDecodingError.self) { try row.decode("name", as: Int.self) }
        #expect(throws: SQLDecodingError.self) { try row.decode("none", as: String.self) }
        #expect(throws: SQLDecodingError.self) { try row.decode("absent", as: String?.self) }
        let fractional = SQLRow(columns: ["n"], values: [.real(2.5)])
        #expect(throws: SQLDecodingError.self) { try fractional.decode("n", as: Int64.self) }
    }
}
