import Foundation
import GRDB

/// `RetentionStore.deleteBundles`: log lines go by rowid range, and the space goes back to the file
/// system.
extension SQLiteStore {
    public func deleteBundles(receivedBefore cutoff: Date, beyondBytesPerProject bytesPerProject: Int64)
        async throws -> RetentionOutcome
    {
        let outcome = try await pool.write { db -> RetentionOutcome in
            let connection = GRDBConnection(db: db)
            return try RetentionTransaction.deleteExpired(
                before: cutoff, beyondBytesPerProject: bytesPerProject, connection
            ) { bundleIDs in
                for fileID in try connection.rows(
                    "SELECT id FROM bundle_files WHERE bundle_id IN (\(list: bundleIDs))",
                    { try $0.decode("id", as: Int64.self) })
                {
                    let first = fileID << Self.lineBits
                    try connection.execute(
                        "DELETE FROM log_lines WHERE rowid BETWEEN \(first) AND \(first + (1 << Self.lineBits) - 1)")
                }
            }
        }
        // Give the freed pages back to the file system. FTS5 keeps deleted rows as tombstones in its
        // segments until they are merged: 'optimize' merges them away (it rewrites the index, so it
        // costs in proportion to the index; retention runs hourly), then the freed pages go.
        if outcome.deletedBundles > 0 {
            try await pool.write { db in try db.execute(sql: "INSERT INTO log_lines(log_lines) VALUES('optimize')") }
        }
        try await pool.writeWithoutTransaction { db in
            try db.execute(sql: "PRAGMA wal_checkpoint(TRUNCATE)")
            try db.execute(sql: "PRAGMA incremental_vacuum")
            try db.execute(sql: "PRAGMA wal_checkpoint(TRUNCATE)")
        }
        return outcome
    }
}
