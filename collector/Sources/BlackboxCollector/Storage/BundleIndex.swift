/// Where ingest stores bundles (through `GroupCommitter`).
public protocol BundleIndex: Sendable {
    /// The stored bundle with this upload id, or else this sha256, in the project.
    func existingBundle(projectID: Int64, uploadID: String?, sha256: String) async throws -> BundleRecord?
    /// Applies many plans in one transaction (group commit), each as `IngestPlan` documents: all of a
    /// bundle, its files, reports and group updates are stored, or none. A plan whose upload id or
    /// hash is already stored writes nothing; its outcome is the existing record.
    func apply(_ plans: [IngestPlan]) async throws -> [IndexOutcome]
}

extension BundleIndex {
    /// Plans and applies validated bundles (tests and tools; ingest plans off the transaction), held
    /// to the default bounds.
    func index(_ bundles: [NewBundle], bounds: IngestBounds = IngestBounds(IngestLimits())) async throws
        -> [IndexOutcome]
    {
        try await apply(bundles.map { try IngestPlan($0, bounds: bounds) })
    }
}
