/// The full-text index of log lines, filled by `LogIndexer`.
public protocol LogIndex: Sendable {
    /// Log files not yet in the search index, oldest first.
    func unindexedLogFiles(limit: Int) async throws -> [BundleFile]
    /// Stores the lines of several files in one transaction (one commit for all of them). Per file
    /// idempotent: storing a file again replaces its lines. A file deleted meanwhile is skipped.
    func storeLogLines(_ files: [LogFileLines]) async throws
    /// A bundle (its blob, app and host), whichever project's; nil once retention deleted it.
    func indexedBundle(id: Int64) async throws -> BundleRecord?
}

extension LogIndex {
    public func storeLogLines(fileID: Int64, lines: [String]) async throws {
        try await storeLogLines([LogFileLines(fileID: fileID, lines: lines)])
    }
}
