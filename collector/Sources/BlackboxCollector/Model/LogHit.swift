/// One log line that matched a search.
public struct LogHit: Codable, Sendable, Equatable {
    public var fileID: Int64
    public var bundleID: Int64
    public var path: String
    public var lineNumber: Int
    public var text: String
}
