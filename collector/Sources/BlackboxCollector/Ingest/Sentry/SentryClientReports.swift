import BlackboxFormat
import BlackboxSentry

/// Sentry's client reports (`SentryClientReport`) as delivery losses. A report carries no release:
/// its losses count under the version of the envelope's event or session when there is one, else
/// under no version.
enum SentryClientReports {
    /// Entries of one item; the rest are not counted.
    static let maxEntries = 64
    static let maxItemBytes = 64 << 10

    static func losses(of item: SentryJSON, appVersion: String?) -> [DeliveryLoss] {
        SentryClientReport(lenient: item, limit: maxEntries).discardedEvents.map {
            // Named and bounded by the plan (`LossRows`), as a manifest's losses are.
            DeliveryLoss(
                appVersion: appVersion, category: $0.category, reason: $0.reason,
                quantity: min($0.quantity, LossRows.maxQuantity))
        }
    }
}
