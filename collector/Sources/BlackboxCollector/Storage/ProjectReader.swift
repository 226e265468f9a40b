/// The read side (JSON API and web UI). Every query is confined to one project by its
/// `ProjectScope`: something of another project is simply not found.
public protocol ProjectReader: Sendable {
    /// Most recently seen first.
    func groups(in scope: ProjectScope, page: Page) async throws -> [CrashGroup]
    func group(id: Int64, in scope: ProjectScope) async throws -> CrashGroup?
    /// Newest first.
    func occurrences(groupID: Int64, in scope: ProjectScope, page: Page) async throws -> [Occurrence]
    func report(id: Int64, in scope: ProjectScope) async throws -> StoredReport?
    /// Most recently received first.
    func bundles(in scope: ProjectScope, page: Page) async throws -> [BundleRecord]
    func bundle(id: Int64, in scope: ProjectScope) async throws -> BundleRecord?
    /// By path.
    func files(bundleID: Int64, in scope: ProjectScope) async throws -> [BundleFile]
    func file(id: Int64, in scope: ProjectScope) async throws -> BundleFile?
    /// Lines holding every word of `query` (already normalized by `SearchQuery`), newest first.
    func searchLogs(in scope: ProjectScope, query: String, page: Page) async throws -> [LogHit]
}
