import BlackboxFormat
import Foundation
import Logging
import NIOPosix
import PostgresNIO
import ServiceLifecycle

/// The scale-out store: PostgreSQL through postgres-nio, shared by any number of collector
/// instances. The same contract as `SQLiteStore` (the storage tests run against both), with
/// what several writers need:
/// - idempotent ingest under concurrency: unique constraints plus `ON CONFLICT DO NOTHING`, so two
///   instances receiving the same Upload-Id at once store it once and both answer with the record;
/// - log indexing claimed per file with `FOR UPDATE SKIP LOCKED` and a lease (`claimed_until`): any
///   number of indexers, no file indexed twice at once, a dead instance's claim expires;
/// - retention under an advisory lock (one instance at a time), dropping whole day partitions of
///   `log_lines` (docs/scale-out.md).
public final class PostgresStore: CollectorStore {
    let client: PostgresClient
    let logger = Logger(label: "collector.postgres")
    private let runner: Task<Void, Never>
    /// Where the shared transaction bodies run (`PostgresWaitingConnection`): one thread per
    /// transaction in flight, so at most this many write at once per instance.
    let threads = NIOThreadPool(numberOfThreads: 8)
    /// `host:port/database`, for error messages.
    private let target: String
    /// Every use of the client passes here, so that closing waits for what runs (`OperationsInFlight`).
    let operations: OperationsInFlight

    /// How long an indexer's claim on a log file lasts before another instance may take it over.
    static let claimSeconds = 300.0
    static let migrationLock: Int64 = 0x626C_6B62_6D69_6731  // "blkbmig1"
    static let retentionLock: Int64 = 0x626C_6B62_7265_7431  // "blkbret1"

    /// `postgres://user:password@host:port/database` (`?sslmode=require` for TLS).
    public init(url: String) throws {
        let configuration = try Self.configuration(url)
        let target =
            URLComponents(string: url).map { "\($0.host ?? "")\($0.port.map { ":\($0)" } ?? "")\($0.path)" } ?? "?"
        self.target = target
        operations = OperationsInFlight(store: "the PostgreSQL store at \(target)")
        client = PostgresClient(configuration: configuration, backgroundLogger: logger)
        let client = self.client
        runner = Task { await client.run() }
        threads.start()
    }

    deinit {
        runner.cancel()
        threads.shutdownGracefully { _ in }
    }

    /// Closes the client's connections once the operations running end (at most 10 s); the store
    /// cannot be used afterwards.
    public func close() async {
        await operations.close(waitingAtMost: .seconds(10))
        runner.cancel()
        await runner.value
        try? await threads.shutdownGracefully()
    }

    static func configuration(_ url: String) throws -> PostgresClient.Configuration {
        guard let components = URLComponents(string: url),
            components.scheme == "postgres" || components.scheme == "postgresql", let host = components.host,
            !host.isEmpty
        else {
            throw StorageError.invalidConfiguration(
                "the database URL must look like postgres://user:password@host:5432/database, got \(url.prefix(100))")
        }
        let database = String(components.path.drop(while: { $0 == "/" }))
        let sslMode = components.queryItems?.first { $0.name == "sslmode" }?.value ?? "disable"
        let tls: PostgresClient.Configuration.TLS =
            switch sslMode {
            case "require", "verify-full": .require(.makeClientConfiguration())
            case "prefer": .prefer(.makeClientConfiguration())
            default: .disable
            }
        return PostgresClient.Configuration(
            host: host, port: components.port ?? 5432, username: components.user ?? "postgres",
            password: components.password, database: database.isEmpty ? nil : database, tls: tls)
    }

    // MARK: Helpers

    static func rows<T>(
        _ connection: PostgresConnection, _ query: PostgresQuery, logger: Logger,
        _ map: (PostgresRandomAccessRow) throws -> T
    ) async throws -> [T] {
        var result: [T] = []
        for try await row in try await connection.query(query, logger: logger) {
            result.append(try map(row.makeRandomAccess()))
        }
        return result
    }

    func transaction<T: Sendable>(_ body: (PostgresConnection, Logger) async throws -> T) async throws -> T {
        let logger = self.logger
        return try await operations.run {
            try await retryingTransientFailures {
                try await client.withTransaction(logger: logger) { connection in try await body(connection, logger) }
            }
        }
    }

    /// Runs a whole transaction again (up to `transientRetries` times, after a short random wait) when
    /// PostgreSQL aborted it for a deadlock or a serialization failure: two instances indexing batches
    /// that touch the same groups in opposite orders deadlock (a CI run's concurrent uploads to two
    /// instances answered 500; `PostgresCoordinationTests` provokes it), and a transaction rolled back
    /// whole can simply run again.
    func retryingTransientFailures<T>(_ transaction: () async throws -> T) async throws -> T {
        var attempt = 0
        while true {
            do {
                return try await transaction()
            } catch  where attempt < Self.transientRetries && Self.isTransient(error) {
                attempt += 1
                logger.notice("a transaction was aborted (\(error)); running it again (attempt \(attempt + 1))")
                try await Task.sleep(for: .milliseconds(Int.random(in: 5...40) * attempt))
            }
        }
    }

    static let transientRetries = 5

    /// Deadlock detected (40P01) or a serialization failure (40001), directly or as the failure of a
    /// transaction's body or commit: the server rolled the transaction back and asks for it again.
    static func isTransient(_ error: any Error) -> Bool {
        if let failed = error as? PostgresTransactionError {
            return [failed.closureError, failed.commitError].contains { $0.map(isTransient) ?? false }
        }
        guard let error = error as? PSQLError, error.code == .server, let state = error.serverInfo?[.sqlState]
        else { return false }
        return state == "40P01" || state == "40001"
    }

    /// Fails with a clear error when the server cannot be reached within `timeout`: postgres-nio
    /// itself would keep reconnecting while the query waits, forever.
    public func checkReachable(timeout: Duration = .seconds(10)) async throws {
        let reached = try await withThrowingTaskGroup(of: Bool.self) { group in
            group.addTask {
                try await self.ping()
                return true
            }
            group.addTask {
                try await Task.sleep(for: timeout)
                return false
            }
            defer { group.cancelAll() }
            return try await group.next() ?? false
        }
        guard reached else {
            throw StorageError.invalidConfiguration(
                "cannot reach PostgreSQL at \(target) within \(timeout) (is it running, and are the URL and credentials right?)"
            )
        }
    }

    public func migrate() async throws {
        try await checkReachable()
        try await transaction { connection, logger in
            try await connection.query("SELECT pg_advisory_xact_lock(\(Self.migrationLock))", logger: logger)
            try await connection.query(
                """
                CREATE TABLE IF NOT EXISTS schema_migrations (
                    version BIGINT PRIMARY KEY, applied_at DOUBLE PRECISION NOT NULL)
                """, logger: logger)
            let applied = Set(
                try await Self.rows(connection, "SELECT version FROM schema_migrations", logger: logger) {
                    try $0["version"].decode(Int64.self)
                })
            for (index, statements) in PostgresSchema.migrations.enumerated() where !applied.contains(Int64(index + 1))
            {
                for statement in statements {
                    try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger)
                }
                try await connection.query(
                    "INSERT INTO schema_migrations (version, applied_at) VALUES (\(Int64(index + 1)), \(Date().timeIntervalSince1970))",
                    logger: logger)
            }
        }
    }
}

/// The application's ServiceGroup owns the client's lifetime: at shutdown, after the services that
/// use the store (which the group stops first), the connections are closed. The client itself runs
/// from `init`, so that operator commands and tests can use a store without a ServiceGroup.
extension PostgresStore: Service {
    public func run() async throws {
        try? await gracefulShutdown()
        await close()
    }
}
