import BlackboxFormat
import BlackboxSentry

/// Sentry's client reports (`client_report` items: what an SDK discarded before sending, and why) as
/// delivery losses. `discarded_events` is the protocol's list; `rate_limited_events`,
/// `filtered_events` and `filtered_sampling_events` are older SDKs' lists without a reason, named here
/// by the reason they stand for. A report carries no release: its losses count under the version of
/// the envelope's event or session when there is one, else under no version.
enum SentryClientReports {
    /// Entries of one item; the rest are not counted.
    static let maxEntries = 64
    static let maxItemBytes = 64 << 10

    static func losses(of item: SentryJSON, appVersion: String?) -> [DeliveryLoss] {
        var losses: [DeliveryLoss] = []
        let lists: [(key: String, reason: String?)] = [
            ("discarded_events", nil), ("rate_limited_events", "ratelimit_backoff"),
            ("filtered_events", "event_processor"), ("filtered_sampling_events", "sample_rate"),
        ]
        for (key, reason) in lists {
            for entry in item[key]?.values ?? [] where losses.count < maxEntries {
                guard let quantity = entry["quantity"]?.integer, quantity > 0 else { continue }
                // Named and bounded by the plan (`LossRows`), as a manifest's losses are.
                losses.append(
                    DeliveryLoss(
                        appVersion: appVersion, category: entry["category"]?.string ?? "",
                        reason: reason ?? entry["reason"]?.string ?? "",
                        quantity: Int(min(quantity, Int64(LossRows.maxQuantity)))))
            }
        }
        return losses
    }
}
