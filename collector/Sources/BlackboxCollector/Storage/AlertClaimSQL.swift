import Foundation

/// The deliveries a sender claims, fairly: at most `perWebhook` of one webhook's and `perProject` of
/// one project's in flight (deliveries another send holds count), every webhook's and project's first
/// turn before any second. One statement both stores run (`?` placeholders; PostgreSQL numbers them):
/// a storm queued for one tenant's receivers cannot keep another project's alert waiting.
enum AlertClaimSQL {
    static func dueIDs(now: Date, limit: Int, perWebhook: Int, perProject: Int) -> (String, [GroupQuerySQL.Argument]) {
        let moment = now.timeIntervalSince1970
        let sql = """
            SELECT id FROM (
                SELECT id, next_attempt_at, claimed_until,
                    ROW_NUMBER() OVER (
                        PARTITION BY project_id ORDER BY in_flight DESC, webhook_turn, next_attempt_at, id) AS turn
                FROM (
                    SELECT d.id, d.next_attempt_at, d.claimed_until, w.project_id,
                        (d.claimed_until IS NOT NULL AND d.claimed_until >= ?) AS in_flight,
                        ROW_NUMBER() OVER (
                            PARTITION BY d.webhook_id
                            ORDER BY (d.claimed_until IS NULL OR d.claimed_until < ?), d.next_attempt_at, d.id
                        ) AS webhook_turn
                    FROM alert_deliveries d JOIN webhooks w ON w.id = d.webhook_id
                    WHERE d.state = 'pending' AND d.next_attempt_at <= ?) per_webhook
                WHERE webhook_turn <= ?) per_project
            WHERE turn <= ? AND (claimed_until IS NULL OR claimed_until < ?)
            ORDER BY turn, next_attempt_at, id LIMIT ?
            """
        return (
            sql,
            [
                .real(moment), .real(moment), .real(moment), .integer(Int64(perWebhook)), .integer(Int64(perProject)),
                .real(moment), .integer(Int64(limit)),
            ]
        )
    }
}
