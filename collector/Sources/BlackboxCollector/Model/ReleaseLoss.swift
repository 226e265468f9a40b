import Foundation

/// What senders dropped before it reached the collector, for one version, category and reason
/// (Sentry client reports; docs/collector.md, "Lost before arrival").
public struct ReleaseLoss: Encodable, Sendable, Equatable {
    /// Rows one project gets per day; further combinations count as `other`.
    static let maxRowsPerDay = 512
    /// Rows one listing returns.
    static let maxListed = 200

    /// `unknown` when the sender named none (a client report alone in its envelope).
    public var version: String
    public var category: String
    public var reason: String
    public var quantity: Int
    /// The last day (UTC) losses of this kind were counted.
    public var lastDay: Date
}
