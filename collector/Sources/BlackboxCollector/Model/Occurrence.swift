import Foundation

/// One report in a group, as the group's page lists it.
public struct Occurrence: Codable, Sendable, Equatable {
    public var reportID: Int64
    public var reportUUID: String
    public var bundleID: Int64
    public var occurredAt: Date
    public var appVersion: String?
    public var host: String?
    public var reason: String?
}
