#if Upload
    /// How the uploader waits between attempts after a 5xx, a timeout or no connection: exponential
    /// backoff with jitter, so that many apps coming back after a collector outage do not return in
    /// lockstep.
    public struct RetryPolicy: Sendable {
        /// The first wait. Default 1 s.
        public var initialDelay: Duration = .seconds(1)
        /// The longest wait. Default 5 minutes.
        public var maxDelay: Duration = .seconds(300)
        /// Attempts per bundle before a pass gives up and leaves the spool for the next one; nil: keep
        /// trying as long as the process runs. Default nil (the app's background uploader); the CLI
        /// sets a small number.
        public var maxAttempts: Int?

        public init() {}

        /// The wait before attempt `attempt + 1` (after `attempt` failures, from 1): half of the capped
        /// exponential delay plus a random part up to the other half.
        public func delay(afterFailures failures: Int, random: Double) -> Duration {
            let exponent = Double(max(0, min(failures - 1, 30)))
            let cap = min(Self.seconds(maxDelay), Self.seconds(initialDelay) * pow2(exponent))
            let seconds = cap / 2 + cap / 2 * min(max(random, 0), 1)
            return .milliseconds(Int64(seconds * 1000))
        }

        private func pow2(_ exponent: Double) -> Double { Double(1 << Int(exponent)) }

        static func seconds(_ duration: Duration) -> Double {
            Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
        }
    }
#endif
