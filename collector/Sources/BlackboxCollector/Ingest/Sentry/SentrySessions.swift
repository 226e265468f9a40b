import BlackboxFormat
import BlackboxSentry
import Foundation

/// Sentry's release health as Blackbox session summaries (what a bundle's manifest carries), so both
/// feed one release-health table and pass the same plausibility rules (`IngestPlan`):
/// - a `session` item counts once it ends: `exited` and `errored` (ended with handled errors: still
///   crash-free) as clean, `crashed` as crashed, `abnormal` as killed (Blackbox's word for a run that
///   ended unseen); `ok` (a session still running) counts nothing yet;
/// - a `sessions` item (aggregates, what server SDKs send per minute) adds its buckets' counts the same way.
/// The version is the release's (`package@version+build` → version), as for events.
enum SentrySessions {
    static func summaries(of item: SentryJSON, type: String, receivedAt: Date) -> [SessionSummary] {
        switch type {
        case "session": session(item, receivedAt: receivedAt).map { [$0] } ?? []
        case "sessions": aggregates(item, receivedAt: receivedAt)
        default: []
        }
    }

    private static func version(_ attributes: SentryJSON?) -> String? {
        SentryEventReport.release(attributes?["release"]?.string).version
    }

    private static func session(_ session: SentryJSON, receivedAt: Date) -> SessionSummary? {
        let status = session["status"]?.string ?? "ok"
        let started = session["started"]?.date ?? receivedAt
        let ended = session["timestamp"]?.date ?? receivedAt
        var summary = SessionSummary(
            appVersion: version(session["attrs"]), firstStart: min(started, ended), lastEnd: ended)
        switch status {
        case "exited", "errored": summary.clean = 1
        case "crashed": summary.crashed = 1
        case "abnormal": summary.killed = 1
        default: return nil
        }
        return summary
    }

    private static func aggregates(_ item: SentryJSON, receivedAt: Date) -> [SessionSummary] {
        let version = version(item["attrs"])
        return (item["aggregates"]?.values ?? []).prefix(1_000).compactMap { bucket in
            // Bounded before adding (a count near Int64.max must not overflow); a negative one makes
            // the summary implausible, so it is dropped and counted as such.
            func count(_ key: String) -> Int { bucket[key]?.integer.map { Int(max(-1, min($0, 1 << 31))) } ?? 0 }
            let started = bucket["started"]?.date ?? receivedAt
            let summary = SessionSummary(
                appVersion: version, clean: count("exited") + count("errored"), crashed: count("crashed"),
                killed: count("abnormal"), firstStart: min(started, receivedAt), lastEnd: receivedAt)
            return summary.total != 0 ? summary : nil
        }
    }
}
