import Foundation
import Logging
import PostgresNIO

/// `AlertStore`, and the queueing of alerts during ingest. Deliveries are claimed with `FOR UPDATE
/// SKIP LOCKED` and a lease, so any number of instances send each one once at a time.
extension PostgresStore {
    public func createWebhook(_ webhook: NewWebhook, in scope: ProjectScope, at now: Date) async throws -> Webhook {
        let events = webhook.events.map(\.rawValue).joined(separator: ",")
        guard
            let id = try await read(
                """
                INSERT INTO webhooks (project_id, url, events, secret, format, threshold_count, threshold_minutes,
                    created_at)
                VALUES (\(scope.projectID), \(webhook.url), \(events), \(webhook.secret), \(webhook.format.rawValue),
                    \(webhook.threshold.map { Int64($0.count) }), \(webhook.threshold.map { Int64($0.minutes) }),
                    \(now.timeIntervalSince1970))
                RETURNING id
                """, { try $0["id"].decode(Int64.self) }
            ).first
        else { throw StorageError.notFound("the new webhook") }
        return Webhook(
            id: id, projectID: scope.projectID, url: webhook.url, events: webhook.events, format: webhook.format,
            threshold: webhook.threshold, createdAt: now, secret: webhook.secret)
    }

    public func webhooks(in scope: ProjectScope) async throws -> [Webhook] {
        try await read("SELECT * FROM webhooks WHERE project_id = \(scope.projectID) ORDER BY id", Self.webhook)
    }

    public func deleteWebhook(id: Int64, in scope: ProjectScope) async throws -> Bool {
        try await !read(
            "DELETE FROM webhooks WHERE id = \(id) AND project_id = \(scope.projectID) RETURNING id",
            { try $0["id"].decode(Int64.self) }
        ).isEmpty
    }

    public func deliveries(webhookID: Int64?, in scope: ProjectScope, page: Page) async throws -> [AlertDelivery] {
        try await read(
            """
            SELECT alert_deliveries.* FROM alert_deliveries JOIN webhooks ON webhooks.id = alert_deliveries.webhook_id
            WHERE webhooks.project_id = \(scope.projectID) AND (\(webhookID)::bigint IS NULL OR webhooks.id = \(webhookID))
            ORDER BY alert_deliveries.id DESC LIMIT \(Int64(page.limit)) OFFSET \(Int64(page.offset))
            """, Self.delivery)
    }

    public func claimDueDeliveries(
        now: Date, claimedUntil: Date, limit: Int, perWebhook: Int, perProject: Int
    ) async throws
        -> [(AlertDelivery, Webhook)]
    {
        // The ranking cannot lock (no FOR UPDATE with window functions): the rows it picks are
        // locked by the outer select, skipping any another instance holds.
        let (due, arguments) = AlertClaimSQL.dueIDs(
            now: now, limit: limit, perWebhook: perWebhook, perProject: perProject)
        let claim =
            "UPDATE alert_deliveries SET claimed_until = ? WHERE id IN (SELECT id FROM alert_deliveries WHERE id IN (\(due)) FOR UPDATE SKIP LOCKED) RETURNING *"
        let claimed = try await read(
            Self.query((claim, [.real(claimedUntil.timeIntervalSince1970)] + arguments)), Self.delivery)
        guard !claimed.isEmpty else { return [] }
        let ids = Array(Set(claimed.map(\.webhookID)))
        let webhooks = try await read("SELECT * FROM webhooks WHERE id = ANY(\(ids))", Self.webhook)
        return claimed.compactMap { delivery in
            webhooks.first { $0.id == delivery.webhookID }.map { (delivery, $0) }
        }
    }

    public func recordAttempt(
        deliveryID: Int64, delivered: Bool, retryAt: Date?, status: Int?, error: String?, at now: Date
    ) async throws {
        let state = delivered ? "delivered" : retryAt == nil ? "failed" : "pending"
        _ = try await read(
            """
            UPDATE alert_deliveries SET attempts = attempts + 1, state = \(state),
                next_attempt_at = \(retryAt?.timeIntervalSince1970), claimed_until = NULL,
                delivered_at = \(delivered ? now.timeIntervalSince1970 : nil), last_status = \(status.map(Int64.init)),
                last_error = \(error)
            WHERE id = \(deliveryID) AND state = 'pending'
            RETURNING id
            """, { try $0["id"].decode(Int64.self) })
    }

    public func nextDeliveryDue() async throws -> Date? {
        try await read("SELECT min(next_attempt_at) AS due FROM alert_deliveries WHERE state = 'pending'") {
            try $0["due"].decode(Double?.self)
        }.first?.map(Date.init(timeIntervalSince1970:))
    }

    // MARK: during ingest

    /// Queues the alerts an occurrence causes (`AlertRules`), in the ingest transaction. The unique
    /// key per webhook makes an alert two instances queue at once one row.
    static func queueAlerts(
        groupID: Int64, createdGroup: Bool, regressedAt: Date?, projectID: Int64, at now: Date,
        _ connection: PostgresConnection, _ logger: Logger
    ) async throws {
        let webhooks = try await rows(
            connection, "SELECT * FROM webhooks WHERE project_id = \(projectID) ORDER BY id", logger: logger, webhook)
        guard !webhooks.isEmpty else { return }
        var counts: [Int: Int] = [:]
        for minutes in AlertRules.windows(for: webhooks) {
            let limit = webhooks.compactMap { $0.threshold?.minutes == minutes ? $0.threshold?.count : nil }.max() ?? 0
            let since = now.timeIntervalSince1970 - Double(minutes * 60)
            counts[minutes] = try await rows(
                connection,
                """
                SELECT count(*) AS n FROM (
                    SELECT 1 FROM reports WHERE group_id = \(groupID) AND occurred_at >= \(since) LIMIT \(Int64(limit + 1))
                ) AS recent
                """, logger: logger, { Int(try $0["n"].decode(Int64.self)) }
            ).first
        }
        let occurrence = AlertRules.Occurrence(
            groupID: groupID, createdGroup: createdGroup, regressedAt: regressedAt, recentCounts: counts,
            receivedAt: now)
        for alert in AlertRules.alerts(for: occurrence, webhooks: webhooks) {
            try await connection.query(
                """
                INSERT INTO alert_deliveries (webhook_id, group_id, event, dedupe_key, occurrences, created_at,
                    next_attempt_at)
                VALUES (\(alert.webhookID), \(groupID), \(alert.event.rawValue), \(alert.dedupeKey),
                    \(alert.occurrences.map(Int64.init)), \(now.timeIntervalSince1970), \(now.timeIntervalSince1970))
                ON CONFLICT (webhook_id, dedupe_key) DO NOTHING
                """, logger: logger)
        }
    }

    // MARK: rows

    static func webhook(_ row: PostgresRandomAccessRow) throws -> Webhook {
        let count = try row["threshold_count"].decode(Int64?.self)
        let minutes = try row["threshold_minutes"].decode(Int64?.self)
        return Webhook(
            id: try row["id"].decode(Int64.self), projectID: try row["project_id"].decode(Int64.self),
            url: try row["url"].decode(String.self),
            events: try row["events"].decode(String.self).split(separator: ",").compactMap {
                AlertEvent(rawValue: String($0))
            },
            format: Webhook.Format(rawValue: try row["format"].decode(String.self)) ?? .json,
            threshold: count.flatMap { count in minutes.map { Webhook.Threshold(count: Int(count), minutes: Int($0)) }
            },
            createdAt: Date(timeIntervalSince1970: try row["created_at"].decode(Double.self)),
            secret: try row["secret"].decode(String?.self))
    }

    static func delivery(_ row: PostgresRandomAccessRow) throws -> AlertDelivery {
        AlertDelivery(
            id: try row["id"].decode(Int64.self), webhookID: try row["webhook_id"].decode(Int64.self),
            event: AlertEvent(rawValue: try row["event"].decode(String.self)) ?? .newGroup,
            groupID: try row["group_id"].decode(Int64.self),
            occurrences: try row["occurrences"].decode(Int64?.self).map(Int.init),
            state: AlertDelivery.State(rawValue: try row["state"].decode(String.self)) ?? .pending,
            attempts: Int(try row["attempts"].decode(Int64.self)),
            createdAt: Date(timeIntervalSince1970: try row["created_at"].decode(Double.self)),
            nextAttemptAt: try row["next_attempt_at"].decode(Double?.self).map(Date.init(timeIntervalSince1970:)),
            deliveredAt: try row["delivered_at"].decode(Double?.self).map(Date.init(timeIntervalSince1970:)),
            lastStatus: try row["last_status"].decode(Int64?.self).map(Int.init),
            lastError: try row["last_error"].decode(String?.self))
    }
}
