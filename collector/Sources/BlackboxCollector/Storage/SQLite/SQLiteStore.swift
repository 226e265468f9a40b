import Foundation
import GRDB

/// The embedded store: one SQLite database (WAL, `synchronous = FULL`, so a commit is durable when it
/// returns) through GRDB. Log lines live in an FTS5 table whose rowid is `fileID << 24 | line`, so a
/// file's lines are one rowid range (fast deletes; at most 16 M lines per file are searchable).
public final class SQLiteStore: CollectorStore {
    let pool: DatabasePool
    /// A read-only connection of its own for the lookup every upload makes, used synchronously (see
    /// `existingBundle`).
    let uploadLookup: DatabaseQueue

    public init(path: String) throws {
        var configuration = Configuration()
        configuration.prepareDatabase { db in
            // auto_vacuum must be chosen before the first table exists (later it is a no-op);
            // INCREMENTAL lets retention give freed pages back without a full VACUUM.
            if !db.configuration.readonly { try db.execute(sql: "PRAGMA auto_vacuum = INCREMENTAL") }
            try db.execute(sql: "PRAGMA synchronous = FULL")
            try db.execute(sql: "PRAGMA foreign_keys = ON")
        }
        configuration.busyMode = .timeout(10)
        pool = try DatabasePool(path: path, configuration: configuration)
        // Made private also when an earlier version created them readable by everyone.
        for file in [path, path + "-wal", path + "-shm"] { chmod(file, 0o600) }
        var lookupConfiguration = Configuration()
        lookupConfiguration.readonly = true
        lookupConfiguration.busyMode = .timeout(10)
        uploadLookup = try DatabaseQueue(path: path, configuration: lookupConfiguration)
    }

    static let lineBits: Int64 = 24

    public func migrate() async throws {
        try SQLiteSchema.migrator.migrate(pool)
    }

}

extension Database {
    // The ingest and indexing statements are compiled once per connection. Compiling is where GRDB
    // runs its authorizer and tracks the regions a statement touches; for these small statements
    // that cost more than executing them (profiled under the 10 KB upload benchmark: ~10 % of the
    // collector's CPU).
    func executeCached(sql: String, arguments: StatementArguments = []) throws {
        try cachedStatement(sql: sql).execute(arguments: arguments)
    }

    func cachedRow(sql: String, arguments: StatementArguments = []) throws -> Row? {
        try Row.fetchOne(cachedStatement(sql: sql), arguments: arguments)
    }

    func cachedRows(sql: String, arguments: StatementArguments = []) throws -> [Row] {
        try Row.fetchAll(cachedStatement(sql: sql), arguments: arguments)
    }

    func cachedValue<Value: DatabaseValueConvertible & StatementColumnConvertible>(
        _ type: Value.Type, sql: String, arguments: StatementArguments = []
    ) throws -> Value? {
        try Value.fetchOne(cachedStatement(sql: sql), arguments: arguments)
    }
}
