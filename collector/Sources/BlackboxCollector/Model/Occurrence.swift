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

/// A report of a trace (`GET /api/v1/traces/{id}`): every crash and error report the failing
/// request's trace produced, in whichever group.
public struct TracedReport: Codable, Sendable, Equatable {
    public var reportID: Int64
    public var groupID: Int64
    public var kind: String
    public var occurredAt: Date
    public var appVersion: String?
    public var host: String?
    public var reason: String?
}
