/// One entry of a stored bundle.
public struct BundleFile: Codable, Sendable, Equatable {
    public enum Kind: String, Codable, Sendable { case report, log, manifest, other }
    public var id: Int64
    public var bundleID: Int64
    /// The entry's name inside the zip (display only: never used as a file system path).
    public var path: String
    public var kind: Kind
    public var size: Int64
    public var sha256: String
}
