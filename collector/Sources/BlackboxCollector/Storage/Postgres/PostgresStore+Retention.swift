import Foundation
import Logging
import PostgresNIO

/// `RetentionStore.deleteBundles`: one instance at a time (an advisory lock; the others skip this
/// round). Days entirely before the cutoff are dropped as partitions; the cutoff's own day loses its
/// expired files row by row.
extension PostgresStore {
    public func deleteBundles(receivedBefore cutoff: Date, beyondBytesPerProject bytesPerProject: Int64)
        async throws -> RetentionOutcome
    {
        let cutoffDay = cutoff.receivedDay
        let outcome = try await write { connection -> RetentionOutcome in
            guard try connection.value("SELECT pg_try_advisory_xact_lock(\(Self.retentionLock)) AS locked") == true
            else { return RetentionOutcome(deletedBundles: 0, unreferencedBlobs: []) }
            let partitions = try connection.rows(
                """
                SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
                WHERE i.inhparent = 'log_lines'::regclass
                """, { try $0.decode("name", as: String.self) })
            let cutoffName = Self.partitionName(cutoffDay)
            // The names are the catalogue's own, of our own partitions.
            for name in partitions where name < cutoffName { try connection.execute("DROP TABLE \(unsafeSQL: name)") }
            return try RetentionTransaction.deleteExpired(
                before: cutoff, beyondBytesPerProject: bytesPerProject, connection
            ) { bundleIDs in
                try connection.execute(
                    """
                    DELETE FROM log_lines WHERE received_day >= \(cutoffDay)\(.cast(.date))
                        AND file_id IN (SELECT id FROM bundle_files WHERE bundle_id IN (\(list: bundleIDs)))
                    """)
            }
        }
        // Row deletes leave dead tuples: VACUUM makes their space reusable (outside a transaction).
        if outcome.deletedBundles > 0 {
            try await operations.run {
                try await client.query("VACUUM (ANALYZE) bundles, bundle_files, reports, log_lines", logger: logger)
            }
        }
        return outcome
    }
}
