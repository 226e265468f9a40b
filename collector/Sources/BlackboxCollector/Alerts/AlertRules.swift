import Foundation

/// Which alerts one stored occurrence causes, decided in plain Swift; each store gathers the facts
/// in its ingest transaction and queues what this returns. Each alert carries a key unique per
/// webhook, so the same event queued twice (two instances, a retried batch) is stored once.
enum AlertRules {
    /// What storing the occurrence did to its group.
    struct Occurrence {
        var groupID: Int64
        var createdGroup: Bool
        /// When the group became regressed by this occurrence, if it did.
        var regressedAt: Date?
        /// The group's occurrences within each threshold window asked for (`windows(for:)`), this one included.
        var recentCounts: [Int: Int]
        var receivedAt: Date
    }

    struct Alert: Equatable {
        var webhookID: Int64
        var event: AlertEvent
        var dedupeKey: String
        var occurrences: Int?
        /// A release regression's release and the one it was compared with.
        var version: String?
        var previousVersion: String?
    }

    /// The threshold windows (minutes) whose counts `alerts` needs.
    static func windows(for webhooks: [Webhook]) -> Set<Int> {
        Set(webhooks.compactMap { $0.events.contains(.threshold) ? $0.threshold?.minutes : nil })
    }

    static func alerts(for occurrence: Occurrence, webhooks: [Webhook]) -> [Alert] {
        var alerts: [Alert] = []
        let group = occurrence.groupID
        for webhook in webhooks {
            if occurrence.createdGroup, webhook.events.contains(.newGroup) {
                alerts.append(.init(webhookID: webhook.id, event: .newGroup, dedupeKey: "new-group:\(group)"))
            }
            if let regressedAt = occurrence.regressedAt, webhook.events.contains(.regression) {
                let moment = Int64((regressedAt.timeIntervalSince1970 * 1000).rounded())
                alerts.append(
                    .init(webhookID: webhook.id, event: .regression, dedupeKey: "regression:\(group):\(moment)"))
            }
            if webhook.events.contains(.threshold), let threshold = webhook.threshold,
                let count = occurrence.recentCounts[threshold.minutes], count > threshold.count
            {
                // At most one per window length: the window the crossing fell in names it.
                let window = Int64(occurrence.receivedAt.timeIntervalSince1970) / Int64(threshold.minutes * 60)
                alerts.append(
                    .init(
                        webhookID: webhook.id, event: .threshold, dedupeKey: "threshold:\(group):\(window)",
                        occurrences: count))
            }
        }
        return alerts
    }

    /// When to try a delivery again after `attempts` failed ones: 2^n seconds (n from 1), at most an
    /// hour, with up to 10 % jitter so instances that failed together do not retry together; nil once
    /// `maxAttempts` is reached (the delivery is then `failed`).
    static func retryDelay(afterAttempts attempts: Int, jitter: Double = .random(in: 0...0.1)) -> Duration? {
        guard attempts < maxAttempts else { return nil }
        let seconds = min(3600.0, pow(2.0, Double(min(attempts, 12))))
        return .milliseconds(Int64(seconds * (1 + jitter) * 1000))
    }

    /// About 9 hours of trying in all.
    static let maxAttempts = 16
}
