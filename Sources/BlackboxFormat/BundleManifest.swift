#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// `manifest.json` at the root of a bundle zip (docs/bundle.md). The collector checks every listed
/// entry's size and sha256 against what it actually inflates.
public struct BundleManifest: Codable, Sendable, Equatable {
    /// 2 adds the `raw-report` entry kind, 3 the `sessions` counts, 4 the `losses`. A manifest is
    /// written with the lowest version that holds what it carries, so that older collectors keep
    /// accepting bundles that need nothing newer.
    public static let currentFormatVersion = 4

    public var formatVersion: Int
    public var bundleID: UUID
    public var app: CrashReport.App
    public var host: String
    public var createdAt: Date
    public var entries: [Entry]
    /// Format 3: how the app's runs ended since the last bundle that counted them, per version.
    public var sessions: [SessionSummary]?
    /// Format 4: what the sender lost for good since it last sent such counts (`DeliveryLoss`).
    /// Uploaders send them in a bundle of their own: a collector too old for format 4 refuses only it.
    public var losses: [DeliveryLoss]?

    public struct Entry: Codable, Sendable, Equatable {
        public enum Kind: String, Codable, Sendable {
            case report, log, other
            /// A signal handler's raw report (`reports/<name>.raw`), sent at crash time: the
            /// collector builds the report (docs/crash-capture.md, "Delivery at crash time").
            case rawReport = "raw-report"
        }
        /// Relative path inside the zip: `reports/<name>.json`, `reports/<name>.raw`, `logs/<name>`.
        public var path: String
        public var kind: Kind
        public var size: Int64
        /// Lowercase hex.
        public var sha256: String

        public init(path: String, kind: Kind, size: Int64, sha256: String) {
            self.path = path
            self.kind = kind
            self.size = size
            self.sha256 = sha256
        }
    }

    public init(
        bundleID: UUID = UUID(), app: CrashReport.App, host: String, createdAt: Date = Date(), entries: [Entry],
        sessions: [SessionSummary]? = nil, losses: [DeliveryLoss]? = nil
    ) {
        self.formatVersion =
            losses?.isEmpty == false
            ? 4 : sessions?.isEmpty == false ? 3 : entries.contains { $0.kind == .rawReport } ? 2 : 1
        self.sessions = sessions?.isEmpty == false ? sessions : nil
        self.losses = losses?.isEmpty == false ? losses : nil
        self.bundleID = bundleID
        self.app = app
        self.host = host
        self.createdAt = ReportTime.milliseconds(createdAt)
        self.entries = entries
    }

    public static func decode(_ data: Data) throws -> BundleManifest {
        try CrashReport.decodeVersioned(BundleManifest.self, from: data, newest: currentFormatVersion)
    }

    public func encoded() throws -> Data { try CrashReport.makeEncoder().encode(self) }
}
