import Foundation
import Logging
import NIOCore
import NIOPosix
import PostgresNIO

/// The shared statements on a PostgreSQL connection, for a synchronous transaction body: each
/// statement waits for its result. Only ever used on the store's own thread pool
/// (`PostgresStore.transaction`), never on an event loop or a cooperative thread, where waiting is
/// not allowed. The cost is a thread per transaction in flight, not per statement: the result
/// arrives the same way an `await` would be resumed.
struct PostgresWaitingConnection: SQLConnection {
    let connection: PostgresConnection
    let logger: Logger

    var dialect: SQLDialect { .postgres }

    func rows(_ statement: SQLStatement) throws -> [SQLRow] {
        try connection.query(Self.query(statement), logger: logger).wait().rows.map(Self.row)
    }

    @discardableResult
    func execute(_ statement: SQLStatement) throws -> Int {
        try connection.query(Self.query(statement), logger: logger).wait().metadata.rows ?? 0
    }

    static func query(_ statement: SQLStatement) -> PostgresQuery {
        let (sql, values) = statement.rendered(for: .postgres)
        var bindings = PostgresBindings(capacity: values.count)
        for value in values {
            switch value {
            case .null: bindings.appendNull()
            case .integer(let value): bindings.append(value)
            case .real(let value): bindings.append(value)
            case .text(let value): bindings.append(value)
            case .bool(let value): bindings.append(value)
            case .blob(let value): bindings.append(ByteBuffer(data: value))
            }
        }
        return PostgresQuery(unsafeSQL: sql, binds: bindings)
    }

    static func row(_ row: PostgresRow) throws -> SQLRow {
        var columns: [String] = []
        var values: [SQLValue] = []
        for cell in row {
            columns.append(cell.columnName)
            values.append(try value(cell))
        }
        return SQLRow(columns: columns, values: values)
    }

    static func value(_ cell: PostgresCell) throws -> SQLValue {
        guard cell.bytes != nil else { return .null }
        switch cell.dataType {
        case .bool: return .bool(try cell.decode(Bool.self))
        case .int2, .int4, .int8: return .integer(try cell.decode(Int64.self))
        case .float4, .float8: return .real(try cell.decode(Double.self))
        case .numeric:
            // `sum()` of a BIGINT column; the statements cast where they need an integer.
            return .real(NSDecimalNumber(decimal: try cell.decode(Decimal.self)).doubleValue)
        case .bytea: return .blob(try cell.decode(Data.self))
        default: return .text(try cell.decode(String.self))
        }
    }
}

extension PostgresStore: SQLDatabase {
    func write<T: Sendable>(_ body: @escaping @Sendable (any SQLConnection) throws -> T) async throws -> T {
        let (logger, threads) = (self.logger, self.threads)
        return try await operations.run {
            try await retryingTransientFailures {
                try await client.withTransaction(logger: logger) { connection in
                    try await threads.runIfActive {
                        try body(PostgresWaitingConnection(connection: connection, logger: logger))
                    }
                }
            }
        }
    }

    func read<T: Sendable>(_ body: @escaping @Sendable (any SQLConnection) throws -> T) async throws -> T {
        let (logger, threads) = (self.logger, self.threads)
        return try await operations.run {
            try await client.withConnection { connection in
                try await threads.runIfActive {
                    try body(PostgresWaitingConnection(connection: connection, logger: logger))
                }
            }
        }
    }

    @discardableResult
    func write(_ statement: SQLStatement) async throws -> [SQLRow] {
        try await rows(statement)
    }

    /// Outside a transaction, so a writing statement commits on its own.
    func rows(_ statement: SQLStatement) async throws -> [SQLRow] {
        let logger = self.logger
        return try await operations.run {
            try await client.withConnection { connection in
                var rows: [SQLRow] = []
                for try await row in try await connection.query(
                    PostgresWaitingConnection.query(statement), logger: logger)
                {
                    rows.append(try PostgresWaitingConnection.row(row))
                }
                return rows
            }
        }
    }
}
