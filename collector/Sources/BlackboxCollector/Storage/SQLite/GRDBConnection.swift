import Foundation
import GRDB

/// The shared statements on a GRDB connection, inside `pool.write` or `pool.read`.
struct GRDBConnection: SQLConnection {
    let db: Database

    var dialect: SQLDialect { .sqlite }

    // Statements are compiled once per connection: compiling is where GRDB runs its authorizer and
    // tracks the regions a statement touches, which for these small statements costs more than
    // executing them (profiled under the 10 KB upload benchmark: ~10 % of the collector's CPU). The
    // texts come from a fixed set of statements; an `IN (…)` list adds one per length.
    func rows(_ statement: SQLStatement) throws -> [SQLRow] {
        let (sql, values) = statement.rendered(for: .sqlite)
        let compiled = try db.cachedStatement(sql: sql)
        compiled.arguments = Self.arguments(values)
        var rows: [SQLRow] = []
        let cursor = try Row.fetchCursor(compiled)
        while let row = try cursor.next() {
            rows.append(SQLRow(columns: Array(row.columnNames), values: row.databaseValues.map(Self.value)))
        }
        return rows
    }

    @discardableResult
    func execute(_ statement: SQLStatement) throws -> Int {
        let (sql, values) = statement.rendered(for: .sqlite)
        try db.cachedStatement(sql: sql).execute(arguments: Self.arguments(values))
        return db.changesCount
    }

    /// Through GRDB's initializer of optional existentials: its initializer of concrete values maps
    /// with a key path, which is instantiated at run time on every call (`swift_getKeyPath`: 2 % of
    /// the collector's CPU while it stored Sentry events, perf 2026-12-05).
    static func arguments(_ values: [SQLValue]) -> StatementArguments {
        StatementArguments(
            values.map { value -> (any DatabaseValueConvertible)? in
                switch value {
                case .null: DatabaseValue.null
                case .integer(let value): value.databaseValue
                case .real(let value): value.databaseValue
                case .text(let value): value.databaseValue
                case .bool(let value): value.databaseValue
                case .blob(let value): value.databaseValue
                }
            })
    }

    static func value(_ value: DatabaseValue) -> SQLValue {
        switch value.storage {
        case .null: .null
        case .int64(let value): .integer(value)
        case .double(let value): .real(value)
        case .string(let value): .text(value)
        case .blob(let value): .blob(value)
        }
    }
}

extension SQLiteStore: SQLDatabase {
    func write<T: Sendable>(_ body: @escaping @Sendable (any SQLConnection) throws -> T) async throws -> T {
        try await pool.write { db in try body(GRDBConnection(db: db)) }
    }

    func read<T: Sendable>(_ body: @escaping @Sendable (any SQLConnection) throws -> T) async throws -> T {
        try await pool.read { db in try body(GRDBConnection(db: db)) }
    }

    func rows(_ statement: SQLStatement) async throws -> [SQLRow] {
        try await read { try $0.rows(statement) }
    }

    @discardableResult
    func write(_ statement: SQLStatement) async throws -> [SQLRow] {
        try await write { try $0.rows(statement) }
    }
}
