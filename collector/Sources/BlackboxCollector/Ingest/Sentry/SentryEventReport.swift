import BlackboxFormat
import BlackboxSentry
import Crypto
import Foundation

/// How the collector reads an SDK's event: as the typed `SentryEvent` (leniently, cut to what a
/// stored report may hold, `ReportBounds`) and then as a report through the one mapping
/// (`CrashReport(sentryEvent:)`, docs/sentry.md). What is the collector's own is added here: the
/// user is reduced to a digest of its id (`user.id-digest`), so no email, name or address is kept.
struct SentryEventReport {
    static let limits: SentryEvent.Limits = {
        var limits = SentryEvent.Limits()
        limits.frames = ReportBounds.maxFrames
        limits.threadFrames = ReportBounds.maxThreadFrames
        // 256 threads of 256 frames each were 65,536 frames from one 2 MB event (security review
        // 2026-11-27, findings 6 and 7).
        limits.allThreadFrames = ReportBounds.maxAllThreadFrames
        limits.images = ReportBounds.maxImages
        return limits
    }()

    func report(_ json: SentryJSON, receivedAt: Date) -> CrashReport {
        let event = SentryEvent(lenient: json, limits: Self.limits)
        var report = CrashReport(sentryEvent: event, receivedAt: receivedAt, limits: Self.limits)
        if let user = event.user, let userID = user.id ?? user.email ?? user.username {
            // Counting affected users needs only that two events are the same user.
            report.metadata["user.id-digest"] = String(SHA256.hash(data: Data(userID.utf8)).lowercaseHex.prefix(16))
        }
        return report
    }
}
