import BlackboxFormat
import BlackboxSentry
import Foundation

/// Sentry's release health (`SentrySession`, `SentrySessionAggregates`) as Blackbox session
/// summaries (what a bundle's manifest carries), so both feed one release-health table and pass the
/// same plausibility rules (`IngestPlan`):
/// - a `session` item counts once it ends: `exited` and `errored` (ended with handled errors: still
///   crash-free) as clean, `crashed` as crashed, `abnormal` as killed (Blackbox's word for a run that
///   ended unseen); `ok` (a session still running) counts nothing yet;
/// - a `sessions` item (aggregates: what server SDKs send per minute, one session per request) adds
///   its buckets' counts to the version's requests: `errored` as server errors, `crashed` and
///   `abnormal` as crashed requests. Blackbox's own `SentryDelivery` (its SDK name in the envelope's
///   header) sends its runs as aggregates: those count as runs, as their bundles would.
/// The version is the release's (`package@version+build` → version), as for events.
enum SentrySessions {
    static let maxBuckets = 1_000

    static func summaries(of item: SentryJSON, type: String, receivedAt: Date, aggregatesCountRuns: Bool = false)
        -> [SessionSummary]
    {
        switch type {
        case "session": session(SentrySession(lenient: item), receivedAt: receivedAt).map { [$0] } ?? []
        case "sessions" where aggregatesCountRuns:
            runs(SentrySessionAggregates(lenient: item, limit: maxBuckets), receivedAt: receivedAt)
        case "sessions": aggregates(SentrySessionAggregates(lenient: item, limit: maxBuckets), receivedAt: receivedAt)
        default: []
        }
    }

    /// Blackbox's runs, as `SentryDelivery` aggregates them: `exited` clean, `crashed`, `abnormal` killed.
    private static func runs(_ item: SentrySessionAggregates, receivedAt: Date) -> [SessionSummary] {
        let version = SentryRelease(item.attrs?.release).version
        return item.aggregates.compactMap { bucket in
            let started = bucket.startedSeconds.map(Date.init(timeIntervalSince1970:)) ?? receivedAt
            let summary = SessionSummary(
                appVersion: version, clean: (bucket.exited ?? 0) + (bucket.errored ?? 0), crashed: bucket.crashed ?? 0,
                killed: bucket.abnormal ?? 0, firstStart: min(started, receivedAt), lastEnd: receivedAt)
            return summary.total != 0 ? summary : nil
        }
    }

    private static func session(_ session: SentrySession, receivedAt: Date) -> SessionSummary? {
        let started = session.started.map(Date.init(timeIntervalSince1970:)) ?? receivedAt
        let ended = session.timestamp.map(Date.init(timeIntervalSince1970:)) ?? receivedAt
        var summary = SessionSummary(
            appVersion: SentryRelease(session.attrs?.release).version, firstStart: min(started, ended), lastEnd: ended)
        switch session.status ?? "ok" {
        case "exited", "errored": summary.clean = 1
        case "crashed": summary.crashed = 1
        case "abnormal": summary.killed = 1
        default: return nil
        }
        return summary
    }

    /// A negative count makes the summary implausible, so it is dropped and counted as such. The sums
    /// cannot overflow: `SentrySessionAggregates(lenient:)` keeps each count within -1…2^31.
    private static func aggregates(_ item: SentrySessionAggregates, receivedAt: Date) -> [SessionSummary] {
        let version = SentryRelease(item.attrs?.release).version
        return item.aggregates.compactMap { bucket in
            let started = bucket.startedSeconds.map(Date.init(timeIntervalSince1970:)) ?? receivedAt
            let (exited, errored) = (bucket.exited ?? 0, bucket.errored ?? 0)
            let crashed = (bucket.crashed ?? 0) + (bucket.abnormal ?? 0)
            let requests = RequestCounts(total: exited + errored + crashed, serverErrors: errored, crashed: crashed)
            guard requests != RequestCounts() else { return nil }
            return SessionSummary(
                appVersion: version, firstStart: min(started, receivedAt), lastEnd: receivedAt, requests: requests)
        }
    }
}
