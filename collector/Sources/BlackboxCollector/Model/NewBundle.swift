import BlackboxFormat
import Foundation

/// A validated bundle, durable on disk, ready to be indexed.
public struct NewBundle: Sendable {
    public var projectID: Int64
    public var uploadID: String?
    public var sha256: String
    public var size: Int64
    public var blob: String
    public var manifest: BundleManifest?
    public var files: [InspectedFile]
    public var reports: [CrashReport]
    /// The stored JSON of `reports[i]`, where the format encoded the report as it is to be stored
    /// (within `ReportBounds`, sanitized) already, so that the plan does not encode it again; else
    /// nil, or fewer entries than reports.
    public var encodedReports: [Data?] = []
    public var receivedAt: Date
    /// Release health from another protocol than the manifest's (Sentry sessions), added to the
    /// manifest's.
    public var sessions: [SessionSummary] = []
    /// What the sender dropped before this upload, from another protocol than the manifest's (Sentry
    /// client reports), added to the manifest's.
    public var losses: [DeliveryLoss] = []
}
