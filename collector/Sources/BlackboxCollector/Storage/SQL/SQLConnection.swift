/// A connection inside one transaction (or one read), as the transaction bodies see it. Synchronous
/// on purpose: GRDB runs a SQLite transaction in a synchronous closure, so a body that both stores
/// share cannot `await`; the PostgreSQL driver runs the same body on a thread where waiting for the
/// server is allowed (`PostgresStore.transaction`). See docs/architecture.md, "Storage".
protocol SQLConnection {
    var dialect: SQLDialect { get }
    func rows(_ statement: SQLStatement) throws -> [SQLRow]
    /// Runs a statement that returns no rows; the number of rows it changed.
    @discardableResult func execute(_ statement: SQLStatement) throws -> Int
}

extension SQLConnection {
    func row(_ statement: SQLStatement) throws -> SQLRow? { try rows(statement).first }

    /// The first column of the first row (`SELECT id …`, `SELECT count(*) …`), if there is a row.
    func value<T: SQLValueConvertible>(_ statement: SQLStatement, as type: T.Type = T.self) throws -> T? {
        guard let row = try rows(statement).first, let column = row.firstColumn else { return nil }
        return try row.decode(column, as: T.self)
    }

    /// Decodes every row with `record`.
    func rows<T>(_ statement: SQLStatement, _ record: (SQLRow) throws -> T) throws -> [T] {
        try rows(statement).map(record)
    }
}

/// Where the shared store code starts a read or a write transaction. Each store is one: SQLite
/// through GRDB's pool, PostgreSQL through its client.
protocol SQLDatabase: Sendable {
    /// Runs `body` in one transaction that commits when it returns and rolls back when it throws.
    func write<T: Sendable>(_ body: @escaping @Sendable (any SQLConnection) throws -> T) async throws -> T
    /// Runs `body` with a connection for reads (a consistent snapshot on SQLite).
    func read<T: Sendable>(_ body: @escaping @Sendable (any SQLConnection) throws -> T) async throws -> T
    /// One reading statement's rows (the common read: no thread of its own on PostgreSQL).
    func rows(_ statement: SQLStatement) async throws -> [SQLRow]
    /// One writing statement, committed on its own; its rows (`RETURNING …`).
    @discardableResult func write(_ statement: SQLStatement) async throws -> [SQLRow]
}
