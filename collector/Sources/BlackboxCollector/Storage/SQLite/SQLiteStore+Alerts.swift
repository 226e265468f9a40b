import Foundation
import GRDB

/// `AlertStore`, and the queueing of alerts during ingest.
extension SQLiteStore {
    public func createWebhook(_ webhook: NewWebhook, in scope: ProjectScope, at now: Date) async throws -> Webhook {
        try await pool.write { db in
            try db.execute(
                sql: """
                    INSERT INTO webhooks (project_id, url, events, secret, format, threshold_count, threshold_minutes,
                        created_at)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                    """,
                arguments: [
                    scope.projectID, webhook.url, webhook.events.map(\.rawValue).joined(separator: ","), webhook.secret,
                    webhook.format.rawValue, webhook.threshold?.count, webhook.threshold?.minutes,
                    now.timeIntervalSince1970,
                ])
            return Webhook(
                id: db.lastInsertedRowID, projectID: scope.projectID, url: webhook.url, events: webhook.events,
                format: webhook.format, threshold: webhook.threshold, createdAt: now, secret: webhook.secret)
        }
    }

    public func webhooks(in scope: ProjectScope) async throws -> [Webhook] {
        try await pool.read { db in try Self.webhooks(projectID: scope.projectID, in: db) }
    }

    public func deleteWebhook(id: Int64, in scope: ProjectScope) async throws -> Bool {
        try await pool.write { db in
            try db.execute(
                sql: "DELETE FROM webhooks WHERE id = ? AND project_id = ?", arguments: [id, scope.projectID])
            return db.changesCount > 0
        }
    }

    public func deliveries(webhookID: Int64?, in scope: ProjectScope, page: Page) async throws -> [AlertDelivery] {
        try await pool.read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT alert_deliveries.* FROM alert_deliveries JOIN webhooks ON webhooks.id = alert_deliveries.webhook_id
                    WHERE webhooks.project_id = ? AND (? IS NULL OR webhooks.id = ?)
                    ORDER BY alert_deliveries.id DESC LIMIT ? OFFSET ?
                    """,
                arguments: [scope.projectID, webhookID, webhookID, page.limit, page.offset]
            ).map(Self.delivery)
        }
    }

    public func claimDueDeliveries(
        now: Date, claimedUntil: Date, limit: Int, perWebhook: Int, perProject: Int
    ) async throws
        -> [(AlertDelivery, Webhook)]
    {
        let (due, arguments) = AlertClaimSQL.dueIDs(
            now: now, limit: limit, perWebhook: perWebhook, perProject: perProject)
        return try await pool.write { db in
            let claimed = try Row.fetchAll(
                db,
                sql: "UPDATE alert_deliveries SET claimed_until = ? WHERE id IN (\(due)) RETURNING *",
                arguments: StatementArguments(
                    [claimedUntil.timeIntervalSince1970.databaseValue] + Self.values(arguments))
            ).map(Self.delivery)
            return try claimed.compactMap { delivery in
                try Row.fetchOne(db, sql: "SELECT * FROM webhooks WHERE id = ?", arguments: [delivery.webhookID])
                    .map { (delivery, Self.webhook($0)) }
            }
        }
    }

    public func recordAttempt(
        deliveryID: Int64, delivered: Bool, retryAt: Date?, status: Int?, error: String?, at now: Date
    ) async throws {
        try await pool.write { db in
            try db.execute(
                sql: """
                    UPDATE alert_deliveries SET attempts = attempts + 1, state = ?, next_attempt_at = ?, claimed_until = NULL,
                        delivered_at = ?, last_status = ?, last_error = ?
                    WHERE id = ? AND state = 'pending'
                    """,
                arguments: [
                    delivered ? "delivered" : retryAt == nil ? "failed" : "pending", retryAt?.timeIntervalSince1970,
                    delivered ? now.timeIntervalSince1970 : nil, status, error, deliveryID,
                ])
        }
    }

    public func nextDeliveryDue() async throws -> Date? {
        try await pool.read { db in
            try Double.fetchOne(db, sql: "SELECT min(next_attempt_at) FROM alert_deliveries WHERE state = 'pending'")
                .map(Date.init(timeIntervalSince1970:))
        }
    }

    // MARK: during ingest

    /// Queues the alerts an occurrence causes (`AlertRules`), in the ingest transaction.
    static func queueAlerts(
        groupID: Int64, createdGroup: Bool, regressedAt: Date?, projectID: Int64, at now: Date, in db: Database
    ) throws {
        let webhooks = try webhooks(projectID: projectID, in: db)
        guard !webhooks.isEmpty else { return }
        var counts: [Int: Int] = [:]
        for minutes in AlertRules.windows(for: webhooks) {
            // Counting stops just past the largest threshold of this window: a hot group costs no more.
            let limit = webhooks.compactMap { $0.threshold?.minutes == minutes ? $0.threshold?.count : nil }.max() ?? 0
            counts[minutes] = try Int.fetchOne(
                db,
                sql: """
                    SELECT count(*) FROM (SELECT 1 FROM reports WHERE group_id = ? AND occurred_at >= ? LIMIT ?)
                    """,
                arguments: [groupID, now.timeIntervalSince1970 - Double(minutes * 60), limit + 1])
        }
        let occurrence = AlertRules.Occurrence(
            groupID: groupID, createdGroup: createdGroup, regressedAt: regressedAt, recentCounts: counts,
            receivedAt: now)
        for alert in AlertRules.alerts(for: occurrence, webhooks: webhooks) {
            try db.executeCached(
                sql: """
                    INSERT INTO alert_deliveries (webhook_id, group_id, event, dedupe_key, occurrences, created_at,
                        next_attempt_at)
                    VALUES (?, ?, ?, ?, ?, ?, ?)
                    ON CONFLICT (webhook_id, dedupe_key) DO NOTHING
                    """,
                arguments: [
                    alert.webhookID, groupID, alert.event.rawValue, alert.dedupeKey, alert.occurrences,
                    now.timeIntervalSince1970, now.timeIntervalSince1970,
                ])
        }
    }

    // MARK: rows

    static func webhooks(projectID: Int64, in db: Database) throws -> [Webhook] {
        try Row.fetchAll(
            db, sql: "SELECT * FROM webhooks WHERE project_id = ? ORDER BY id", arguments: [projectID]
        ).map(webhook)
    }

    static func webhook(_ row: Row) -> Webhook {
        let count: Int? = row["threshold_count"]
        let minutes: Int? = row["threshold_minutes"]
        return Webhook(
            id: row["id"], projectID: row["project_id"], url: row["url"],
            events: (row["events"] as String).split(separator: ",").compactMap { AlertEvent(rawValue: String($0)) },
            format: Webhook.Format(rawValue: row["format"]) ?? .json,
            threshold: count.flatMap { count in minutes.map { Webhook.Threshold(count: count, minutes: $0) } },
            createdAt: Date(timeIntervalSince1970: row["created_at"]), secret: row["secret"])
    }

    static func delivery(_ row: Row) -> AlertDelivery {
        AlertDelivery(
            id: row["id"], webhookID: row["webhook_id"], event: AlertEvent(rawValue: row["event"]) ?? .newGroup,
            groupID: row["group_id"], occurrences: row["occurrences"],
            state: AlertDelivery.State(rawValue: row["state"]) ?? .pending, attempts: row["attempts"],
            createdAt: Date(timeIntervalSince1970: row["created_at"]),
            nextAttemptAt: (row["next_attempt_at"] as Double?).map(Date.init(timeIntervalSince1970:)),
            deliveredAt: (row["delivered_at"] as Double?).map(Date.init(timeIntervalSince1970:)),
            lastStatus: row["last_status"], lastError: row["last_error"])
    }
}
