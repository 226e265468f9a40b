import Foundation

/// One stored upload (a zip), as the read API lists it.
public struct BundleRecord: Codable, Sendable, Equatable {
    public var id: Int64
    public var projectID: Int64
    public var uploadID: String?
    public var sha256: String
    public var size: Int64
    public var blob: String
    public var appName: String?
    public var appVersion: String?
    public var host: String?
    public var hasManifest: Bool
    public var receivedAt: Date
    public var fileCount: Int
    public var reportCount: Int
}
