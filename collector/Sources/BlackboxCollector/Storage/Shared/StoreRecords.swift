import BlackboxSentry
import Foundation

// The records, from rows as both drivers hand them over: one mapping per table.

extension APIKey {
    init(row: SQLRow) throws {
        self.init(
            id: try row.decode("id"), projectID: try row.decode("project_id"),
            kind: APIKey.Kind(rawValue: try row.decode("kind")) ?? .ingest, prefix: try row.decode("prefix"),
            createdAt: try row.decode("created_at"), revokedAt: try row.decode("revoked_at"))
    }
}

extension BundleRecord {
    init(row: SQLRow) throws {
        self.init(
            id: try row.decode("id"), projectID: try row.decode("project_id"), uploadID: try row.decode("upload_id"),
            sha256: try row.decode("sha256"), size: try row.decode("size"), blob: try row.decode("blob"),
            appName: try row.decode("app_name"), appVersion: try row.decode("app_version"),
            host: try row.decode("host"), hasManifest: try row.decode("has_manifest"),
            receivedAt: try row.decode("received_at"), fileCount: try row.decode("file_count"),
            reportCount: try row.decode("report_count"))
    }
}

extension BundleFile {
    init(row: SQLRow) throws {
        self.init(
            id: try row.decode("id"), bundleID: try row.decode("bundle_id"), path: try row.decode("path"),
            kind: BundleFile.Kind(rawValue: try row.decode("kind")) ?? .other, size: try row.decode("size"),
            sha256: try row.decode("sha256"))
    }
}

extension GroupStatus {
    /// The status columns of `crash_groups` (`GroupStatus.columns`).
    static let columns: SQLStatement =
        "state, resolved_in, resolved_after, ignored_until_count, ignored_until, state_changed_at"

    init(row: SQLRow) throws {
        self.init()
        state = GroupStatus.State(rawValue: try row.decode("state")) ?? .open
        resolvedIn = try row.decode("resolved_in")
        resolvedAfter = try row.decode("resolved_after")
        ignoredUntilCount = try row.decode("ignored_until_count")
        ignoredUntil = try row.decode("ignored_until")
        changedAt = try row.decode("state_changed_at")
    }
}

extension GroupStatusChange {
    init(row: SQLRow) throws {
        self.init(
            at: try row.decode("at"), actor: try row.decode("actor"),
            from: GroupStatus.State(rawValue: try row.decode("from_state")) ?? .open,
            to: GroupStatus.State(rawValue: try row.decode("to_state")) ?? .open, detail: try row.decode("detail"))
    }
}

extension Webhook {
    init(row: SQLRow) throws {
        let count: Int? = try row.decode("threshold_count")
        let minutes: Int? = try row.decode("threshold_minutes")
        let factor: Double? = try row.decode("regression_factor")
        let minimumRequests: Int? = try row.decode("regression_minimum_requests")
        self.init(
            id: try row.decode("id"), projectID: try row.decode("project_id"), url: try row.decode("url"),
            events: try row.decode("events", as: String.self).split(separator: ",").compactMap {
                AlertEvent(rawValue: String($0))
            },
            format: Webhook.Format(rawValue: try row.decode("format")) ?? .json,
            threshold: count.flatMap { count in minutes.map { Webhook.Threshold(count: count, minutes: $0) } },
            releaseRegression: factor.flatMap { factor in
                minimumRequests.map { Webhook.ReleaseRegression(factor: factor, minimumRequests: $0) }
            },
            createdAt: try row.decode("created_at"), secret: try row.decode("secret"))
    }
}

extension AlertDelivery {
    init(row: SQLRow) throws {
        self.init(
            id: try row.decode("id"), webhookID: try row.decode("webhook_id"),
            event: AlertEvent(rawValue: try row.decode("event")) ?? .newGroup, groupID: try row.decode("group_id"),
            version: try row.decode("app_version"), previousVersion: try row.decode("previous_version"),
            occurrences: try row.decode("occurrences"),
            state: AlertDelivery.State(rawValue: try row.decode("state")) ?? .pending,
            attempts: try row.decode("attempts"), createdAt: try row.decode("created_at"),
            nextAttemptAt: try row.decode("next_attempt_at"), deliveredAt: try row.decode("delivered_at"),
            lastStatus: try row.decode("last_status"), lastError: try row.decode("last_error"))
    }
}

extension Date {
    /// The UTC day (`YYYY-MM-DD`) a bundle was received: on PostgreSQL, the partition of its log lines.
    var receivedDay: String { formatted(.iso8601.year().month().day()) }
}

extension SymbolFile {
    init(row: SQLRow) throws {
        self.init(
            id: try row.decode("id"), projectID: try row.decode("project_id"), buildID: try row.decode("build_id"),
            debugID: SentryEvent.Image.debugID(ofBuildID: try row.decode("build_id")),
            fileName: try row.decode("file_name"), size: try row.decode("size"), sha256: try row.decode("sha256"),
            sha1: try row.decode("sha1"), blob: try row.decode("blob"), hasDebugInfo: try row.decode("has_debug_info"),
            hasCode: try row.decode("has_code"), hasSources: try row.decode("has_sources"),
            uploadedAt: try row.decode("uploaded_at"),
            symbolizerFailures: try row.decode("symbolizer_failures"))
    }
}
