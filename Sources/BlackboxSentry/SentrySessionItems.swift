import Foundation

/// Sentry's release health items (develop.sentry.dev/sdk/telemetry/sessions/): a `session` item is
/// one session's update, a `sessions` item aggregates counts per started minute or hour (what server
/// SDKs send, and what Blackbox's delivery sends per release).
public struct SentrySession: Codable, Sendable, Equatable {
    /// `ok` (still running), `exited`, `errored`, `crashed`, `abnormal`.
    public var status: String?
    /// RFC 3339 times or seconds since 1970; read as seconds.
    public var started: Double?
    public var timestamp: Double?
    public var attrs: SentrySessionAttributes?

    public init(lenient json: SentryJSON) {
        status = json["status"]?.string
        started = json["started"]?.secondsSince1970
        timestamp = json["timestamp"]?.secondsSince1970
        attrs = json["attrs"].map(SentrySessionAttributes.init(lenient:))
    }
}

public struct SentrySessionAggregates: Codable, Sendable, Equatable {
    public var attrs: SentrySessionAttributes?
    public var aggregates: [Bucket]

    public init(attrs: SentrySessionAttributes?, aggregates: [Bucket]) {
        self.attrs = attrs
        self.aggregates = aggregates
    }

    public struct Bucket: Codable, Sendable, Equatable {
        /// RFC 3339 when written; read from seconds too.
        public var started: String?
        public var exited: Int?
        public var errored: Int?
        public var crashed: Int?
        public var abnormal: Int?

        public init(
            started: String?, exited: Int? = nil, errored: Int? = nil, crashed: Int? = nil, abnormal: Int? = nil
        ) {
            self.started = started
            self.exited = exited
            self.errored = errored
            self.crashed = crashed
            self.abnormal = abnormal
        }

        /// The bucket's start in seconds since 1970.
        public var startedSeconds: Double? { started.flatMap { SentryJSON.string($0).secondsSince1970 } }
    }

    /// At most `limit` buckets. Counts are clamped to -1...2^31 before anything adds them (a count
    /// near Int64.max must not overflow; a negative one stays negative, so a reader can refuse it).
    public init(lenient json: SentryJSON, limit: Int) {
        attrs = json["attrs"].map(SentrySessionAttributes.init(lenient:))
        aggregates = (json["aggregates"]?.values ?? []).prefix(limit).map { bucket in
            func count(_ key: String) -> Int? { bucket[key]?.integer.map { Int(max(-1, min($0, 1 << 31))) } }
            let started = bucket["started"]?.string ?? bucket["started"]?.date.map { $0.formatted(.iso8601) }
            return Bucket(
                started: started, exited: count("exited"), errored: count("errored"), crashed: count("crashed"),
                abnormal: count("abnormal"))
        }
    }
}

public struct SentrySessionAttributes: Codable, Sendable, Equatable {
    /// `package@version+build` (`SentryRelease`).
    public var release: String?
    public var environment: String?

    public init(release: String?, environment: String?) {
        self.release = release
        self.environment = environment
    }

    public init(lenient json: SentryJSON) {
        release = json["release"]?.string
        environment = json["environment"]?.string
    }
}
