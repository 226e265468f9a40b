import Foundation
import Logging
import PostgresNIO

/// `RetentionStore`.
extension PostgresStore {
    public func referencedBlobs(_ blobs: [String]) async throws -> Set<String> {
        try await transaction { connection, logger in try await Self.referencedBlobs(blobs, connection, logger) }
    }

    static func referencedBlobs(_ blobs: [String], _ connection: PostgresConnection, _ logger: Logger)
        async throws -> Set<String>
    {
        guard !blobs.isEmpty else { return [] }
        return Set(
            try await rows(
                connection, "SELECT DISTINCT blob FROM bundles WHERE blob = ANY(\(blobs))", logger: logger,
                { try $0["blob"].decode(String.self) }))
    }

    /// One instance at a time (an advisory lock; the others skip this round). Days entirely before
    /// the cutoff are dropped as partitions; the cutoff's own day loses its expired files row by row.
    public func deleteBundles(receivedBefore cutoff: Date, beyondBytesPerProject bytesPerProject: Int64)
        async throws -> RetentionOutcome
    {
        let cutoffDay = Self.day(cutoff)
        let outcome = try await transaction { connection, logger -> RetentionOutcome in
            let locked = try await Self.rows(
                connection, "SELECT pg_try_advisory_xact_lock(\(Self.retentionLock)) AS locked", logger: logger,
                { try $0["locked"].decode(Bool.self) })
            guard locked.first == true else { return RetentionOutcome(deletedBundles: 0, unreferencedBlobs: []) }
            try await connection.query(
                "DELETE FROM release_sessions WHERE day < \(ReleaseSQL.day(cutoff))", logger: logger)
            let expired = try await Self.rows(
                connection,
                Self.query(
                    (RetentionSQL.expiredBundles, [.real(cutoff.timeIntervalSince1970), .integer(bytesPerProject)])),
                logger: logger, { (try $0["id"].decode(Int64.self), try $0["blob"].decode(String.self)) })
            let partitions = try await Self.rows(
                connection,
                """
                SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
                WHERE i.inhparent = 'log_lines'::regclass
                """, logger: logger, { try $0["name"].decode(String.self) })
            let cutoffName = Self.partitionName(cutoffDay)
            for name in partitions where name < cutoffName {
                try await connection.query(PostgresQuery(unsafeSQL: "DROP TABLE \(name)"), logger: logger)
            }
            guard !expired.isEmpty else { return RetentionOutcome(deletedBundles: 0, unreferencedBlobs: []) }
            let ids = expired.map(\.0)
            try await connection.query(
                """
                DELETE FROM log_lines WHERE received_day >= \(cutoffDay)::date
                    AND file_id IN (SELECT id FROM bundle_files WHERE bundle_id = ANY(\(ids)))
                """, logger: logger)
            try await connection.query("DELETE FROM reports WHERE bundle_id = ANY(\(ids))", logger: logger)
            try await connection.query("DELETE FROM bundle_files WHERE bundle_id = ANY(\(ids))", logger: logger)
            try await connection.query("DELETE FROM bundles WHERE id = ANY(\(ids))", logger: logger)
            try await connection.query(
                """
                UPDATE crash_groups SET latest_report_id =
                    (SELECT id FROM reports WHERE group_id = crash_groups.id ORDER BY occurred_at DESC LIMIT 1)
                WHERE latest_report_id IS NOT NULL AND latest_report_id NOT IN (SELECT id FROM reports)
                """, logger: logger)
            let candidates = Array(Set(expired.map(\.1))).sorted()
            let referenced = try await Self.referencedBlobs(candidates, connection, logger)
            return RetentionOutcome(
                deletedBundles: expired.count, unreferencedBlobs: candidates.filter { !referenced.contains($0) })
        }
        // Row deletes leave dead tuples: VACUUM makes their space reusable (outside a transaction).
        if outcome.deletedBundles > 0 {
            try await client.query("VACUUM (ANALYZE) bundles, bundle_files, reports, log_lines", logger: logger)
        }
        return outcome
    }
}
