import Foundation

/// What a webhook is told about.
public enum AlertEvent: String, Codable, Sendable, CaseIterable {
    /// A crash group the project had not seen.
    case newGroup = "new-group"
    /// A resolved group seen again in a version at or above its resolution (`GroupTriage`).
    case regression
    /// A group with more than `threshold.count` occurrences within `threshold.minutes`.
    case threshold
    /// A release whose failed-request rate is more than `releaseRegression.factor` times the previous
    /// release's (`ReleaseRegressionRule`).
    case releaseRegression = "release-regression"
}

/// A project's webhook: where alerts are POSTed, for which events, how they are signed and shaped.
public struct Webhook: Codable, Sendable, Equatable {
    public enum Format: String, Codable, Sendable {
        /// `{"event": …, "group": {…}, …}` (docs/collector.md, "Alerts").
        case json
        /// `{"text": …}`, which Slack's incoming webhooks (and Mattermost's, and others) accept.
        case slack
    }

    public struct Threshold: Codable, Sendable, Equatable {
        /// More than this many occurrences…
        public var count: Int
        /// …within this many minutes.
        public var minutes: Int
    }

    public struct ReleaseRegression: Codable, Sendable, Equatable {
        /// A release alerts once its failed-request rate is more than this many times the previous one's…
        public var factor: Double
        /// …once each of the two has served at least this many requests.
        public var minimumRequests: Int
    }

    public var id: Int64
    public var projectID: Int64
    public var url: String
    public var events: [AlertEvent]
    public var format: Format
    public var threshold: Threshold?
    public var releaseRegression: ReleaseRegression?
    /// Whether deliveries are signed (`X-Blackbox-Signature`); the secret itself is never shown.
    public var signed: Bool { secret != nil }
    public var createdAt: Date
    var secret: String?

    enum CodingKeys: String, CodingKey {
        case id, projectID, url, events, format, threshold, releaseRegression, signed, createdAt
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(projectID, forKey: .projectID)
        try container.encode(url, forKey: .url)
        try container.encode(events, forKey: .events)
        try container.encode(format, forKey: .format)
        try container.encodeIfPresent(threshold, forKey: .threshold)
        try container.encodeIfPresent(releaseRegression, forKey: .releaseRegression)
        try container.encode(signed, forKey: .signed)
        try container.encode(createdAt, forKey: .createdAt)
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(Int64.self, forKey: .id)
        projectID = try container.decode(Int64.self, forKey: .projectID)
        url = try container.decode(String.self, forKey: .url)
        events = try container.decode([AlertEvent].self, forKey: .events)
        format = try container.decode(Format.self, forKey: .format)
        threshold = try container.decodeIfPresent(Threshold.self, forKey: .threshold)
        releaseRegression = try container.decodeIfPresent(ReleaseRegression.self, forKey: .releaseRegression)
        createdAt = try container.decode(Date.self, forKey: .createdAt)
        secret = nil
    }

    init(
        id: Int64, projectID: Int64, url: String, events: [AlertEvent], format: Format, threshold: Threshold?,
        releaseRegression: ReleaseRegression? = nil, createdAt: Date, secret: String?
    ) {
        self.id = id
        self.projectID = projectID
        self.url = url
        self.events = events
        self.format = format
        self.threshold = threshold
        self.releaseRegression = releaseRegression
        self.createdAt = createdAt
        self.secret = secret
    }
}

/// A webhook as a request creates it (validated by `init(json:)`).
public struct NewWebhook: Sendable, Equatable {
    public var url: String
    public var events: [AlertEvent]
    public var secret: String?
    public var format: Webhook.Format
    public var threshold: Webhook.Threshold?
    public var releaseRegression: Webhook.ReleaseRegression?
}

/// One alert for one webhook: queued in the transaction that stored the occurrence causing it, sent
/// by `AlertDispatcher`, retried with backoff until it is answered with 2xx or runs out of attempts.
public struct AlertDelivery: Codable, Sendable, Equatable {
    public enum State: String, Codable, Sendable {
        case pending, delivered, failed
    }

    public var id: Int64
    public var webhookID: Int64
    public var event: AlertEvent
    /// The group a group event is about (nil for a release regression).
    public var groupID: Int64?
    /// A release regression's release, and the one before it it was compared with.
    public var version: String?
    public var previousVersion: String?
    /// Threshold events: the occurrences counted in the window.
    public var occurrences: Int?
    public var state: State
    public var attempts: Int
    public var createdAt: Date
    public var nextAttemptAt: Date?
    public var deliveredAt: Date?
    /// The receiver's last HTTP status, or nil when it could not be reached.
    public var lastStatus: Int?
    public var lastError: String?
}
