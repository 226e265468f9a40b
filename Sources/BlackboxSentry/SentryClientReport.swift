import Foundation

/// A Sentry client report (a `client_report` item: what an SDK discarded before sending, and why),
/// written by Blackbox's delivery and read by the collector.
public struct SentryClientReport: Codable, Sendable, Equatable {
    /// Seconds since 1970.
    public var timestamp: Double?
    public var discardedEvents: [Discarded]

    enum CodingKeys: String, CodingKey {
        case timestamp
        case discardedEvents = "discarded_events"
    }

    public struct Discarded: Codable, Sendable, Equatable {
        /// `ratelimit_backoff`, `network_error`, `queue_overflow`, `send_error`, ….
        public var reason: String
        /// `error`, `session`, `log_item`, `attachment`, ….
        public var category: String
        public var quantity: Int

        public init(reason: String, category: String, quantity: Int) {
            self.reason = reason
            self.category = category
            self.quantity = quantity
        }
    }

    public init(timestamp: Double?, discardedEvents: [Discarded]) {
        self.timestamp = timestamp
        self.discardedEvents = discardedEvents
    }

    /// `discarded_events` is the protocol's list; `rate_limited_events`, `filtered_events` and
    /// `filtered_sampling_events` are older SDKs' lists without a reason, read as the reason they
    /// stand for. At most `limit` entries; an entry without a positive quantity counts nothing and is
    /// left out. A quantity past `Int32.max` is read as that.
    public init(lenient json: SentryJSON, limit: Int) {
        timestamp = json["timestamp"]?.secondsSince1970
        discardedEvents = []
        let lists: [(key: String, reason: String?)] = [
            ("discarded_events", nil), ("rate_limited_events", "ratelimit_backoff"),
            ("filtered_events", "event_processor"), ("filtered_sampling_events", "sample_rate"),
        ]
        for (key, reason) in lists {
            for entry in json[key]?.values ?? [] where discardedEvents.count < limit {
                guard let quantity = entry["quantity"]?.integer, quantity > 0 else { continue }
                discardedEvents.append(
                    Discarded(
                        reason: reason ?? entry["reason"]?.string ?? "", category: entry["category"]?.string ?? "",
                        quantity: Int(min(quantity, Int64(Int32.max)))))
            }
        }
    }
}
