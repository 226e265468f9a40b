import Foundation

/// `AlertStore`. Deliveries are claimed with `FOR UPDATE SKIP LOCKED` (PostgreSQL) and a lease, so
/// any number of instances send each one once at a time.
extension SQLDatabase {
    public func createWebhook(_ webhook: NewWebhook, in scope: ProjectScope, at now: Date) async throws -> Webhook {
        let events = webhook.events.map(\.rawValue).joined(separator: ",")
        guard
            let id = try await write(
                """
                INSERT INTO webhooks (project_id, url, events, secret, format, threshold_count, threshold_minutes,
                    regression_factor, regression_minimum_requests, created_at)
                VALUES (\(scope.projectID), \(webhook.url), \(events), \(webhook.secret), \(webhook.format.rawValue),
                    \(webhook.threshold?.count), \(webhook.threshold?.minutes), \(webhook.releaseRegression?.factor),
                    \(webhook.releaseRegression?.minimumRequests), \(now))
                RETURNING id
                """
            ).first?.decode("id", as: Int64.self)
        else { throw StorageError.notFound("the new webhook") }
        return Webhook(
            id: id, projectID: scope.projectID, url: webhook.url, events: webhook.events, format: webhook.format,
            threshold: webhook.threshold, releaseRegression: webhook.releaseRegression, createdAt: now,
            secret: webhook.secret)
    }

    public func webhooks(in scope: ProjectScope) async throws -> [Webhook] {
        try await rows("SELECT * FROM webhooks WHERE project_id = \(scope.projectID) ORDER BY id").map(Webhook.init)
    }

    public func deleteWebhook(id: Int64, in scope: ProjectScope) async throws -> Bool {
        try await !write("DELETE FROM webhooks WHERE id = \(id) AND project_id = \(scope.projectID) RETURNING id")
            .isEmpty
    }

    public func deliveries(webhookID: Int64?, in scope: ProjectScope, page: Page) async throws -> [AlertDelivery] {
        try await rows(
            """
            SELECT alert_deliveries.* FROM alert_deliveries JOIN webhooks ON webhooks.id = alert_deliveries.webhook_id
            WHERE webhooks.project_id = \(scope.projectID)
                AND (\(webhookID)\(.cast(.bigint)) IS NULL OR webhooks.id = \(webhookID))
            ORDER BY alert_deliveries.id DESC LIMIT \(page.limit) OFFSET \(page.offset)
            """
        ).map(AlertDelivery.init)
    }

    public func claimDueDeliveries(
        now: Date, claimedUntil: Date, limit: Int, perWebhook: Int, perProject: Int
    ) async throws -> [(AlertDelivery, Webhook)] {
        let due = AlertStatements.dueIDs(now: now, limit: limit, perWebhook: perWebhook, perProject: perProject)
        return try await write { connection in
            // The ranking cannot lock (no FOR UPDATE with window functions): the rows it picks are
            // locked by the outer select, skipping any another instance holds. The ranking read the
            // statement's snapshot, so another instance may have claimed a row and committed since:
            // the lock re-evaluates this select's own conditions on the row's latest version (and
            // not the ranking's), so they say again that it is still pending and unclaimed.
            let claimed = try connection.rows(
                """
                UPDATE alert_deliveries SET claimed_until = \(claimedUntil)
                WHERE id IN (
                    SELECT id FROM alert_deliveries
                    WHERE id IN (\(due)) AND state = 'pending' AND (claimed_until IS NULL OR claimed_until < \(now))
                    \(.forUpdateSkipLocked))
                RETURNING *
                """, AlertDelivery.init)
            guard !claimed.isEmpty else { return [] }
            let ids = Array(Set(claimed.map(\.webhookID))).sorted()
            let webhooks = try connection.rows("SELECT * FROM webhooks WHERE id IN (\(list: ids))", Webhook.init)
            return claimed.compactMap { delivery in
                webhooks.first { $0.id == delivery.webhookID }.map { (delivery, $0) }
            }
        }
    }

    public func recordAttempt(
        deliveryID: Int64, delivered: Bool, retryAt: Date?, status: Int?, error: String?, at now: Date
    ) async throws {
        let state = delivered ? "delivered" : retryAt == nil ? "failed" : "pending"
        try await write(
            """
            UPDATE alert_deliveries SET attempts = attempts + 1, state = \(state), next_attempt_at = \(retryAt),
                claimed_until = NULL, delivered_at = \(delivered ? now : nil), last_status = \(status),
                last_error = \(error)
            WHERE id = \(deliveryID) AND state = 'pending'
            RETURNING id
            """)
    }

    public func nextDeliveryDue() async throws -> Date? {
        try await rows("SELECT min(next_attempt_at) AS due FROM alert_deliveries WHERE state = 'pending'")
            .first?.decode("due", as: Date?.self)
    }
}

enum AlertStatements {
    /// Queues the alerts an occurrence causes (`AlertRules`), in the ingest transaction. The unique
    /// key per webhook makes an alert two instances queue at once one row.
    static func queue(
        groupID: Int64, createdGroup: Bool, regressedAt: Date?, projectID: Int64, at now: Date,
        _ connection: some SQLConnection
    ) throws {
        let webhooks = try connection.rows(
            "SELECT * FROM webhooks WHERE project_id = \(projectID) ORDER BY id", Webhook.init)
        guard !webhooks.isEmpty else { return }
        var counts: [Int: Int] = [:]
        for minutes in AlertRules.windows(for: webhooks) {
            // Counting stops just past the largest threshold of this window: a hot group costs no more.
            let limit = webhooks.compactMap { $0.threshold?.minutes == minutes ? $0.threshold?.count : nil }.max() ?? 0
            let since = now.addingTimeInterval(-Double(minutes * 60))
            counts[minutes] = try connection.value(
                """
                SELECT count(*) AS n FROM (
                    SELECT 1 FROM reports WHERE group_id = \(groupID) AND occurred_at >= \(since) LIMIT \(limit + 1)
                ) AS recent
                """)
        }
        let occurrence = AlertRules.Occurrence(
            groupID: groupID, createdGroup: createdGroup, regressedAt: regressedAt, recentCounts: counts,
            receivedAt: now)
        for alert in AlertRules.alerts(for: occurrence, webhooks: webhooks) {
            try connection.execute(
                """
                INSERT INTO alert_deliveries (webhook_id, group_id, event, dedupe_key, occurrences, created_at,
                    next_attempt_at)
                VALUES (\(alert.webhookID), \(groupID), \(alert.event.rawValue), \(alert.dedupeKey),
                    \(alert.occurrences), \(now), \(now))
                ON CONFLICT (webhook_id, dedupe_key) DO NOTHING
                """)
        }
    }

    /// Queues the release regressions the plan's request counts cause (`ReleaseRegressionRule`), in
    /// the ingest transaction, after `ReleaseStatements.addSessions` added them. Reads the project's
    /// per-version totals only when one of its webhooks asks for release regressions.
    static func queueReleaseRegressions(_ plan: IngestPlan, _ connection: some SQLConnection) throws {
        let versions = Set(plan.sessions.filter { $0.requests.total > 0 }.map(\.versionKey))
        guard !versions.isEmpty else { return }
        let projectID = plan.bundle.projectID
        let webhooks = try connection.rows(
            "SELECT * FROM webhooks WHERE project_id = \(projectID) AND regression_factor IS NOT NULL ORDER BY id",
            Webhook.init)
        guard !webhooks.isEmpty else { return }
        let releases = try connection.rows(
            """
            SELECT s.app_version, CAST(sum(s.requests) AS BIGINT) AS requests,
                CAST(sum(s.request_errors + s.crashed_requests) AS BIGINT) AS failed, min(s.day) AS first_day,
                min(v.first_seen) AS first_seen
            FROM release_sessions s
                LEFT JOIN app_versions v ON v.project_id = s.project_id AND v.version = s.app_version
            WHERE s.project_id = \(projectID) AND s.requests > 0
            GROUP BY s.app_version ORDER BY max(s.day) DESC LIMIT \(ReleaseRegressionRule.maxCompared)
            """
        ) { row in
            let firstDay = try row.decode("first_day", as: Int64.self)
            return ReleaseRegressionRule.Release(
                version: try row.decode("app_version"), requests: try row.decode("requests"),
                failed: try row.decode("failed"),
                firstSeen: try row.decode("first_seen", as: Date?.self)
                    ?? Date(timeIntervalSince1970: Double(firstDay) * 86_400))
        }
        let now = plan.bundle.receivedAt
        for current in releases where versions.contains(current.version) {
            for alert in ReleaseRegressionRule.alerts(for: current, among: releases, webhooks: webhooks) {
                try connection.execute(
                    """
                    INSERT INTO alert_deliveries (webhook_id, app_version, previous_version, event, dedupe_key,
                        created_at, next_attempt_at)
                    VALUES (\(alert.webhookID), \(alert.version), \(alert.previousVersion), \(alert.event.rawValue),
                        \(alert.dedupeKey), \(now), \(now))
                    ON CONFLICT (webhook_id, dedupe_key) DO NOTHING
                    """)
            }
        }
    }

    /// The deliveries a sender claims, fairly: at most `perWebhook` of one webhook's and `perProject`
    /// of one project's in flight (deliveries another send holds count), every webhook's and
    /// project's first turn before any second. A storm queued for one tenant's receivers cannot keep
    /// another project's alert waiting.
    static func dueIDs(now: Date, limit: Int, perWebhook: Int, perProject: Int) -> SQLStatement {
        """
        SELECT id FROM (
            SELECT id, next_attempt_at, claimed_until,
                ROW_NUMBER() OVER (
                    PARTITION BY project_id ORDER BY in_flight DESC, webhook_turn, next_attempt_at, id) AS turn
            FROM (
                SELECT d.id, d.next_attempt_at, d.claimed_until, w.project_id,
                    (d.claimed_until IS NOT NULL AND d.claimed_until >= \(now)) AS in_flight,
                    ROW_NUMBER() OVER (
                        PARTITION BY d.webhook_id
                        ORDER BY (d.claimed_until IS NULL OR d.claimed_until < \(now)), d.next_attempt_at, d.id
                    ) AS webhook_turn
                FROM alert_deliveries d JOIN webhooks w ON w.id = d.webhook_id
                WHERE d.state = 'pending' AND d.next_attempt_at <= \(now)) per_webhook
            WHERE webhook_turn <= \(perWebhook)) per_project
        WHERE turn <= \(perProject) AND (claimed_until IS NULL OR claimed_until < \(now))
        ORDER BY turn, next_attempt_at, id LIMIT \(limit)
        """
    }
}
