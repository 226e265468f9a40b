import Foundation

/// Symbolication statements both stores run, with `?` placeholders (PostgreSQL numbers them:
/// `GroupQuerySQL.numbered`), so that the attempt rules cannot drift between them.
enum SymbolicationSQL {
    typealias Argument = GroupQuerySQL.Argument

    /// A failed attempt at a report, at its epoch: counted, and either retried at a later time or,
    /// at the last attempt, given up (`missing` with the reason, which readers show as `failed`).
    /// SET reads the row's values from before the update in both dialects.
    static func failedAttempt(_ report: PendingReport, reason: String, retryAt: Date, maxAttempts: Int)
        -> (String, [Argument])
    {
        (
            """
            UPDATE reports SET symbolication_attempts = symbolication_attempts + 1, symbolication_retry_at = ?,
                symbolication = CASE WHEN symbolication_attempts + 1 >= ? THEN 'missing' ELSE 'pending' END,
                symbolication_failure = CASE WHEN symbolication_attempts + 1 >= ? THEN ? ELSE symbolication_failure END
            WHERE id = ? AND symbolication = 'pending' AND symbolication_epoch = ?
            """,
            [
                .real(retryAt.timeIntervalSince1970), .integer(Int64(maxAttempts)), .integer(Int64(maxAttempts)),
                .text(reason), .integer(report.id), .integer(report.epoch),
            ]
        )
    }
}
