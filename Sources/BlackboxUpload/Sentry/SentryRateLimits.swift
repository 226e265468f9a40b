#if Upload
    import Foundation
    import Synchronization

    /// What a Sentry server said about sending more, per category (develop.sentry.dev/sdk/expected-
    /// features/rate-limiting/): `X-Sentry-Rate-Limits: <seconds>:<categories>:<scope>[:…], …`, where
    /// no categories means all of them; a 429 without that header limits everything for its
    /// `Retry-After` (60 s when absent). Shared by the copies of one transport; the deadlines live
    /// only as long as the process (a restart asks the server again, which answers the same).
    public final class SentryRateLimits: Sendable {
        private let deadlines = Mutex<[String: ContinuousClock.Instant]>([:])
        /// The key standing for every category.
        static let all = ""

        public init() {}

        /// Applies a response's headers (any status may carry `X-Sentry-Rate-Limits`).
        func update(status: Int, rateLimits: String?, retryAfter: String?, now: ContinuousClock.Instant = .now) {
            var limits: [(String, Duration)] = []
            if let rateLimits, !rateLimits.isEmpty {
                limits = Self.parse(rateLimits)
            } else if status == 429 {
                limits = [(Self.all, Self.retryAfter(retryAfter))]
            }
            guard !limits.isEmpty else { return }
            deadlines.withLock { deadlines in
                for (category, delay) in limits {
                    let until = now + delay
                    if let current = deadlines[category], current >= until { continue }
                    deadlines[category] = until
                }
            }
        }

        /// Until when `category` is held back, if it is.
        func limitedUntil(_ category: String, now: ContinuousClock.Instant = .now) -> ContinuousClock.Instant? {
            deadlines.withLock { deadlines in
                [deadlines[category], deadlines[Self.all]].compactMap { $0 }.filter { $0 > now }.max()
            }
        }

        /// `60:error;attachment:organization:quota, 10::key` → [("error", 60 s), ("attachment", 60 s),
        /// ("", 10 s)]. Unreadable entries are skipped; a wait is at most a day.
        static func parse(_ header: String) -> [(String, Duration)] {
            var result: [(String, Duration)] = []
            for entry in header.prefix(4_096).split(separator: ",") {
                let fields = entry.trimmingCharacters(in: .whitespaces).split(
                    separator: ":", omittingEmptySubsequences: false)
                guard fields.count >= 2, let seconds = Double(fields[0]), seconds.isFinite, seconds >= 0 else {
                    continue
                }
                let delay = Duration.milliseconds(Int64(min(seconds, 86_400) * 1000))
                let categories = fields[1].split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }
                if categories.isEmpty {
                    result.append((all, delay))
                } else {
                    result += categories.map { ($0, delay) }
                }
            }
            return result
        }

        /// `Retry-After` in seconds (the HTTP-date form is rare from Sentry servers: it counts as the
        /// default), at most a day.
        static func retryAfter(_ value: String?) -> Duration {
            guard let value, let seconds = Double(value.trimmingCharacters(in: .whitespaces)), seconds.isFinite,
                seconds >= 0
            else { return .seconds(60) }
            return .milliseconds(Int64(min(seconds, 86_400) * 1000))
        }
    }
#endif
