#if Upload
    import Foundation
    import Logging

    /// Sends every bundle in a spool, oldest first, following the retry contract: a 2xx deletes the
    /// local copy; 400/413/422 move it to `rejected/` with the reason; 401/403 stop the pass (the key
    /// must be fixed first; bundles stay); a rate-limited kind of data waits for a later pass while the
    /// others go on; anything else waits with backoff and tries again, up to `retry.maxAttempts`,
    /// after which the pass ends and the bundles wait for the next one.
    public struct SpoolUploader: Sendable {
        public var spool: Spool
        public var transport: any SpoolTransport
        public var retry: RetryPolicy
        /// Progress and results, for a progress bar or a log; called on the uploading task.
        public var events: @Sendable (UploadEvent) -> Void
        /// Where refusals are counted as losses, to be sent as a client report; nil: not counted.
        public var losses: DeliveryLosses?
        /// Replaceable in tests; [0, 1].
        var random: @Sendable () -> Double = { Double.random(in: 0...1) }
        var sleep: @Sendable (Duration) async throws -> Void = { try await Task.sleep(for: $0) }

        public init(
            spool: Spool, transport: any SpoolTransport, retry: RetryPolicy = RetryPolicy(),
            events: @escaping @Sendable (UploadEvent) -> Void = { _ in }
        ) {
            self.spool = spool
            self.transport = transport
            self.retry = retry
            self.events = events
        }

        public struct Summary: Sendable, Equatable {
            public var uploaded = 0
            public var duplicates = 0
            public var rejected = 0
            /// Held back by a rate limit; still in the spool.
            public var deferred = 0
            /// Bundles still in the spool when the pass ended.
            public var remaining = 0
            /// Why the pass ended early, if it did.
            public var stoppedBy: StopReason?
            public init() {}
        }

        public enum StopReason: Sendable, Equatable {
            case unauthorized(ServerAnswer)
            case unreachable(String)
            case cancelled
        }

        public func drain() async -> Summary {
            var summary = Summary()
            let bundles = spool.pending()
            for (index, bundle) in bundles.enumerated() {
                if let stop = await send(bundle, into: &summary) {
                    summary.stoppedBy = stop
                    summary.remaining = bundles.count - index
                    return summary
                }
            }
            return summary
        }

        /// One bundle until it is settled; a non-nil result ends the pass.
        private func send(_ bundle: Spool.Bundle, into summary: inout Summary) async -> StopReason? {
            var failures = 0
            while true {
                if Task.isCancelled { return .cancelled }
                events(.started(bundle))
                let outcome = await transport.upload(file: bundle.path, uploadID: bundle.id) { sent, total in
                    events(.progress(bundle, sent: sent, total: total))
                }
                switch outcome {
                case .stored(let duplicate):
                    spool.uploaded(bundle)
                    summary.uploaded += 1
                    if duplicate { summary.duplicates += 1 }
                    events(.stored(bundle, duplicate: duplicate))
                    return nil
                case .rejected(let answer):
                    do {
                        try spool.reject(bundle, answer: answer)
                    } catch {
                        events(.localProblem(bundle, "\(error)"))
                    }
                    summary.rejected += 1
                    losses?.refused(bundle, status: answer.status)
                    events(.rejected(bundle, answer))
                    return nil
                case .unauthorized(let answer):
                    events(.unauthorized(bundle, answer))
                    return .unauthorized(answer)
                case .deferred(let reason):
                    summary.deferred += 1
                    events(.deferred(bundle, reason: reason))
                    return nil
                case .retryLater(let reason):
                    failures += 1
                    if let limit = retry.maxAttempts, failures >= limit {
                        events(.gaveUp(bundle, attempts: failures, reason: reason))
                        return .unreachable(reason)
                    }
                    let delay = retry.delay(afterFailures: failures, random: random())
                    events(.waiting(bundle, attempt: failures, delay: delay, reason: reason))
                    do {
                        try await sleep(delay)
                    } catch {
                        return .cancelled
                    }
                }
            }
        }
    }

    /// What the uploader is doing, for progress bars and logs.
    public enum UploadEvent: Sendable {
        case started(Spool.Bundle)
        case progress(Spool.Bundle, sent: Int64, total: Int64)
        case stored(Spool.Bundle, duplicate: Bool)
        case rejected(Spool.Bundle, ServerAnswer)
        case unauthorized(Spool.Bundle, ServerAnswer)
        case waiting(Spool.Bundle, attempt: Int, delay: Duration, reason: String)
        case deferred(Spool.Bundle, reason: String)
        case gaveUp(Spool.Bundle, attempts: Int, reason: String)
        case localProblem(Spool.Bundle, String)

        /// One line for a log, or nil for progress (too frequent to log).
        public var logLine: (level: Logger.Level, text: String)? {
            switch self {
            case .started, .progress: nil
            case .stored(let bundle, let duplicate):
                (
                    .info,
                    "uploaded bundle \(bundle.id.uuidString.lowercased()) (\(bundle.size) bytes\(duplicate ? ", already stored" : ""))"
                )
            case .rejected(let bundle, let answer):
                (
                    .error,
                    "the collector refused bundle \(bundle.id.uuidString.lowercased()) for good: \(answer); kept in rejected/"
                )
            case .unauthorized(_, let answer):
                (.error, "the collector refused the ingest key: \(answer); uploads wait until the key is fixed")
            case .waiting(let bundle, let attempt, let delay, let reason):
                (
                    .notice,
                    "upload of \(bundle.id.uuidString.lowercased()) failed (attempt \(attempt): \(reason)); retrying in \(delay)"
                )
            case .deferred(let bundle, let reason):
                (.info, "\(bundle.id.uuidString.lowercased()) waits in the spool: \(reason)")
            case .gaveUp(let bundle, let attempts, let reason):
                (
                    .warning,
                    "upload of \(bundle.id.uuidString.lowercased()) failed \(attempts) times (\(reason)); it stays in the spool"
                )
            case .localProblem(let bundle, let problem):
                (.error, "bundle \(bundle.id.uuidString.lowercased()): \(problem)")
            }
        }
    }
#endif
