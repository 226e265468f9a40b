import Foundation
import Logging
import PostgresNIO

/// `LogIndex`: log lines in a table partitioned by day, claimed per file by one indexer at a time.
extension PostgresStore {
    /// Claims the files it returns for `claimSeconds`: another instance asking at the same time gets
    /// other files (`SKIP LOCKED`), and a claim whose instance died expires.
    public func unindexedLogFiles(limit: Int) async throws -> [BundleFile] {
        let now = Date()
        return try await write(
            """
            UPDATE bundle_files SET claimed_until = \(now.addingTimeInterval(Self.claimSeconds))
            WHERE id IN (
                SELECT id FROM bundle_files
                WHERE NOT indexed AND kind = 'log' AND (claimed_until IS NULL OR claimed_until < \(now))
                ORDER BY id LIMIT \(limit) FOR UPDATE SKIP LOCKED)
            RETURNING *
            """
        ).map(BundleFile.init).sorted { $0.id < $1.id }
    }

    public func storeLogLines(_ files: [LogFileLines]) async throws {
        try await transaction { connection, logger in
            for file in files {
                try await Self.storeLogLines(fileID: file.fileID, lines: file.lines, connection, logger)
            }
        }
    }

    static func storeLogLines(
        fileID: Int64, lines: [String], _ connection: PostgresConnection, _ logger: Logger
    )
        async throws
    {
        // Locking the file's row orders this against retention deleting it: lines of a deleted
        // file are never stored.
        guard
            let day = try await Self.rows(
                connection, "SELECT received_day::text AS day FROM bundle_files WHERE id = \(fileID) FOR UPDATE",
                logger: logger, { try $0["day"].decode(String.self) }
            ).first
        else { return }
        try await Self.ensurePartition(day: day, connection, logger)
        // Idempotent: a second indexer or a restart redoes the whole file.
        try await connection.query(
            "DELETE FROM log_lines WHERE received_day = \(day)::date AND file_id = \(fileID)", logger: logger)
        // PostgreSQL text cannot hold NUL.
        let texts = lines.map { $0.contains("\u{0}") ? $0.replacingOccurrences(of: "\u{0}", with: "") : $0 }
        for start in stride(from: 0, to: texts.count, by: 5_000) {
            let chunk = Array(texts[start..<min(start + 5_000, texts.count)])
            let numbers = (start..<start + chunk.count).map { Int32($0 + 1) }
            try await connection.query(
                """
                INSERT INTO log_lines (received_day, file_id, line_number, text)
                SELECT \(day)::date, \(fileID), n, t FROM unnest(\(numbers)::int[], \(chunk)::text[]) AS u(n, t)
                """, logger: logger)
        }
        try await connection.query(
            "UPDATE bundle_files SET indexed = true, claimed_until = NULL WHERE id = \(fileID)", logger: logger)
    }

    /// `log_lines_pYYYYMMDD` for one day, created by whoever needs it first.
    static func ensurePartition(day: String, _ connection: PostgresConnection, _ logger: Logger)
        async throws
    {
        guard let date = try? Date(day, strategy: .iso8601.year().month().day()) else {
            throw StorageError.notFound("day \(day)")
        }
        let name = partitionName(day)
        try await connection.query("SELECT pg_advisory_xact_lock(hashtext(\(name)))", logger: logger)
        let next = date.addingTimeInterval(86_400).receivedDay
        // Both bounds come from our own date formatting, never from input.
        try await connection.query(
            PostgresQuery(
                unsafeSQL:
                    "CREATE TABLE IF NOT EXISTS \(name) PARTITION OF log_lines FOR VALUES FROM ('\(day)') TO ('\(next)')"
            ),
            logger: logger)
    }

    static func partitionName(_ day: String) -> String { "log_lines_p" + day.filter(\.isNumber) }
}
