/// What each project has stored, for its quotas (`IngestLimits.maxBundleBytesPerProject`,
/// `maxSymbolFilesPerProject`, `maxSymbolBytesPerProject`).
public protocol UsageStore: Sendable {
    /// Bytes of the project's stored bundles, as sent.
    func bundleBytes(projectID: Int64) async throws -> Int64
    func symbolUsage(projectID: Int64) async throws -> SymbolUsage
}

/// A project's symbol files and their bytes, as stored.
public struct SymbolUsage: Codable, Sendable, Equatable {
    public var files: Int
    public var bytes: Int64
}
