import Foundation
import GRDB

/// `RetentionStore`.
extension SQLiteStore {
    public func referencedBlobs(_ blobs: [String]) async throws -> Set<String> {
        try await pool.read { db in try Self.referencedBlobs(blobs, in: db) }
    }

    static func referencedBlobs(_ blobs: [String], in db: Database) throws -> Set<String> {
        try Set(
            blobs.filter { blob in
                try db.cachedValue(Bool.self, sql: "SELECT 1 FROM bundles WHERE blob = ? LIMIT 1", arguments: [blob])
                    == true
            })
    }

    public func deleteBundles(receivedBefore cutoff: Date, beyondBytesPerProject bytesPerProject: Int64)
        async throws -> RetentionOutcome
    {
        let outcome = try await pool.write { db -> RetentionOutcome in
            try db.execute(
                sql: "DELETE FROM release_sessions WHERE day < ?", arguments: [ReleaseSQL.day(cutoff)])
            let expired = try Row.fetchAll(
                db, sql: RetentionSQL.expiredBundles, arguments: [cutoff.timeIntervalSince1970, bytesPerProject])
            for bundle in expired {
                let id: Int64 = bundle["id"]
                for fileID in try Int64.fetchAll(
                    db, sql: "SELECT id FROM bundle_files WHERE bundle_id = ?", arguments: [id])
                {
                    let first = fileID << Self.lineBits
                    try db.execute(
                        sql: "DELETE FROM log_lines WHERE rowid BETWEEN ? AND ?",
                        arguments: [first, first + (1 << Self.lineBits) - 1])
                }
                try db.execute(sql: "DELETE FROM reports WHERE bundle_id = ?", arguments: [id])
                try db.execute(sql: "DELETE FROM bundle_files WHERE bundle_id = ?", arguments: [id])
                try db.execute(sql: "DELETE FROM bundles WHERE id = ?", arguments: [id])
            }
            // Groups keep their counts; a group whose latest report is gone points at the newest left.
            try db.execute(
                sql: """
                    UPDATE crash_groups SET latest_report_id =
                        (SELECT id FROM reports WHERE group_id = crash_groups.id ORDER BY occurred_at DESC LIMIT 1)
                    WHERE latest_report_id NOT IN (SELECT id FROM reports)
                    """)
            let candidates = Array(Set(expired.map { $0["blob"] as String })).sorted()
            let referenced = try Self.referencedBlobs(candidates, in: db)
            return RetentionOutcome(
                deletedBundles: expired.count, unreferencedBlobs: candidates.filter { !referenced.contains($0) })
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
