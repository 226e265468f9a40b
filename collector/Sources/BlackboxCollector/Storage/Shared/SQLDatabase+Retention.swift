import Foundation

/// `RetentionStore.referencedBlobs`, and the part of retention both stores share.
extension SQLDatabase {
    public func referencedBlobs(_ blobs: [String]) async throws -> Set<String> {
        try await read { connection in try RetentionTransaction.referencedBlobs(blobs, connection) }
    }
}

enum RetentionTransaction {
    /// Deletes bundles received before `cutoff` and each project's oldest past `bytesPerProject`,
    /// with their reports and files, and release health before `cutoff`. `deleteLogLines` removes the
    /// expired bundles' indexed lines, which each database keeps its own way.
    static func deleteExpired(
        before cutoff: Date, beyondBytesPerProject bytesPerProject: Int64, _ connection: some SQLConnection,
        deleteLogLines: ([Int64]) throws -> Void
    ) throws -> RetentionOutcome {
        try connection.execute("DELETE FROM release_sessions WHERE day < \(ReleaseStatements.day(cutoff))")
        try connection.execute("DELETE FROM release_losses WHERE day < \(ReleaseStatements.day(cutoff))")
        let expired = try connection.rows(
            """
            SELECT id, blob FROM (
                SELECT id, blob, received_at,
                    sum(size) OVER (PARTITION BY project_id ORDER BY received_at DESC, id DESC) AS newer_bytes
                FROM bundles) AS ranked
            WHERE received_at < \(cutoff) OR newer_bytes > \(bytesPerProject)
            """
        ) { (id: try $0.decode("id", as: Int64.self), blob: try $0.decode("blob", as: String.self)) }
        guard !expired.isEmpty else { return RetentionOutcome(deletedBundles: 0, unreferencedBlobs: []) }
        for chunk in expired.map(\.id).chunked(500) {
            try deleteLogLines(chunk)
            try connection.execute("DELETE FROM reports WHERE bundle_id IN (\(list: chunk))")
            try connection.execute("DELETE FROM bundle_files WHERE bundle_id IN (\(list: chunk))")
            try connection.execute("DELETE FROM bundles WHERE id IN (\(list: chunk))")
        }
        // Groups keep their counts; a group whose latest report is gone points at the newest left.
        try connection.execute(
            """
            UPDATE crash_groups SET latest_report_id =
                (SELECT id FROM reports WHERE group_id = crash_groups.id ORDER BY occurred_at DESC LIMIT 1)
            WHERE latest_report_id IS NOT NULL AND latest_report_id NOT IN (SELECT id FROM reports)
            """)
        let candidates = Array(Set(expired.map(\.blob))).sorted()
        let referenced = try referencedBlobs(candidates, connection)
        return RetentionOutcome(
            deletedBundles: expired.count, unreferencedBlobs: candidates.filter { !referenced.contains($0) })
    }

    static func referencedBlobs(_ blobs: [String], _ connection: some SQLConnection) throws -> Set<String> {
        var referenced: Set<String> = []
        for chunk in blobs.chunked(500) {
            for row in try connection.rows("SELECT DISTINCT blob FROM bundles WHERE blob IN (\(list: chunk))") {
                referenced.insert(try row.decode("blob"))
            }
        }
        return referenced
    }
}

extension Array {
    /// Consecutive slices of at most `size` elements (statements bind a bounded number of values).
    func chunked(_ size: Int) -> [[Element]] {
        stride(from: 0, to: count, by: size).map { Array(self[$0..<Swift.min($0 + size, count)]) }
    }
}
