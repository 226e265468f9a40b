import Foundation

/// A team's space: its keys, bundles and crash groups are its own.
public struct Project: Codable, Sendable, Equatable {
    public var id: Int64
    public var name: String
    public var createdAt: Date
}
