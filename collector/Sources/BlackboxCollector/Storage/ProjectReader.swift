import Foundation

/// The read side (JSON API and web UI). Every query is confined to one project by its
/// `ProjectScope`: something of another project is simply not found.
public protocol ProjectReader: Sendable {
    /// The groups `query` selects, in its order.
    func groups(in scope: ProjectScope, query: GroupQuery, page: Page) async throws -> [CrashGroup]
    /// Per group, occurrences (by crash time) in `buckets` consecutive buckets of `bucketSeconds`
    /// from `since`: the trend charts.
    func occurrenceHistogram(
        groupIDs: [Int64], in scope: ProjectScope, since: Date, bucketSeconds: Int, buckets: Int
    ) async throws -> [Int64: [Int]]
    func group(id: Int64, in scope: ProjectScope) async throws -> CrashGroup?
    /// Newest first.
    func occurrences(groupID: Int64, in scope: ProjectScope, page: Page) async throws -> [Occurrence]
    func report(id: Int64, in scope: ProjectScope) async throws -> StoredReport?
    /// The reports whose scope carried `traceID`, oldest first.
    func reports(traceID: String, in scope: ProjectScope, page: Page) async throws -> [TracedReport]
    /// Most recently received first.
    func bundles(in scope: ProjectScope, page: Page) async throws -> [BundleRecord]
    func bundle(id: Int64, in scope: ProjectScope) async throws -> BundleRecord?
    /// By path.
    func files(bundleID: Int64, in scope: ProjectScope) async throws -> [BundleFile]
    func file(id: Int64, in scope: ProjectScope) async throws -> BundleFile?
    /// Lines holding every word of `query` (already normalized by `SearchQuery`), newest first.
    func searchLogs(in scope: ProjectScope, query: String, page: Page) async throws -> [LogHit]
}

extension ProjectReader {
    /// Most recently seen first.
    func groups(in scope: ProjectScope, page: Page) async throws -> [CrashGroup] {
        try await groups(in: scope, query: GroupQuery(), page: page)
    }
}

/// Counts per group and bucket (`occurrenceHistogram`'s rows) as one array per group asked for, with
/// zeros where nothing happened; rows outside the buckets are ignored.
func histogram(groupIDs: [Int64], buckets: Int, rows: [(group: Int64, bucket: Int, count: Int)]) -> [Int64: [Int]] {
    var histogram = Dictionary(
        groupIDs.map { ($0, Array(repeating: 0, count: buckets)) }, uniquingKeysWith: { first, _ in first })
    for row in rows where (0..<buckets).contains(row.bucket) { histogram[row.group]?[row.bucket] = row.count }
    return histogram
}
