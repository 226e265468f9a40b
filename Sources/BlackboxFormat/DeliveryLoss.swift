/// What a sender dropped before it reached the collector, and why: Sentry's client reports
/// (`discarded_events`: a reason, a data category, a quantity), the app's version when it is known.
/// The reasons are Sentry's where one fits (`ratelimit_backoff`, `queue_overflow`, `cache_overflow`,
/// `network_error`, `send_error`, `before_send`, `sample_rate`…).
public struct DeliveryLoss: Codable, Sendable, Equatable {
    public var appVersion: String?
    /// What was lost: `error`, `session`, `attachment`, `log_item`…
    public var category: String
    public var reason: String
    public var quantity: Int

    public init(appVersion: String? = nil, category: String, reason: String, quantity: Int) {
        self.appVersion = appVersion
        self.category = category
        self.reason = reason
        self.quantity = quantity
    }
}
