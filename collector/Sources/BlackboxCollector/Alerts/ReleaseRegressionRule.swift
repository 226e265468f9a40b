import Foundation

/// Whether a release's requests fail more often than the previous release's, by a webhook's factor
/// (`Webhook.ReleaseRegression`). Decided in plain Swift from per-version totals that the store reads
/// in the ingest transaction that added the counts (`AlertStatements.queueReleaseRegressions`).
enum ReleaseRegressionRule {
    /// One version's request health, summed over the days the store keeps.
    struct Release: Equatable {
        var version: String
        var requests: Int
        /// Server errors and requests a crash cut short.
        var failed: Int
        /// When the collector first saw it: orders versions that are not semantic versions.
        var firstSeen: Date

        var failureRate: Double { requests == 0 ? 0 : Double(failed) / Double(requests) }
    }

    /// At most this many versions (the most recently counted) are looked at for the previous release.
    static let maxCompared = 200

    /// The alerts `current`'s counts cause, one per webhook that asks and at most one per release
    /// and webhook (the key names the release, so a release that keeps failing is reported once).
    static func alerts(for current: Release, among releases: [Release], webhooks: [Webhook]) -> [AlertRules.Alert] {
        webhooks.compactMap { webhook in
            guard webhook.events.contains(.releaseRegression), let rule = webhook.releaseRegression,
                current.version != CrashGroup.otherValues, current.requests >= rule.minimumRequests,
                let previous = previous(of: current, among: releases, minimumRequests: rule.minimumRequests)
            else { return nil }
            // A release without a failure counts as one failure in its requests: a single failed
            // request of a new release is no regression of a perfect one by every factor at once.
            let baseline = max(previous.failureRate, 1 / Double(previous.requests))
            guard current.failureRate > rule.factor * baseline else { return nil }
            return AlertRules.Alert(
                webhookID: webhook.id, event: .releaseRegression, dedupeKey: "release-regression:\(current.version)",
                version: current.version, previousVersion: previous.version)
        }
    }

    /// The newest release older than `current` that served at least `minimumRequests`: a canary
    /// that served a handful between the two says too little to compare with.
    static func previous(of current: Release, among releases: [Release], minimumRequests: Int) -> Release? {
        releases.filter {
            $0.version != current.version && $0.version != CrashGroup.otherValues && $0.requests >= minimumRequests
                && isOlder($0, than: current)
        }
        .max { isOlder($0, than: $1) }
    }

    /// By semantic version where both parse (`SemanticVersion`), else by when each was first seen.
    static func isOlder(_ release: Release, than other: Release) -> Bool {
        if let left = SemanticVersion(release.version), let right = SemanticVersion(other.version) {
            return left < right
        }
        return release.firstSeen < other.firstSeen
    }
}
