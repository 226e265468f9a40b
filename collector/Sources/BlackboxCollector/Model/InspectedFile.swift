public struct InspectedFile: Sendable, Equatable {
    public var path: String
    public var kind: BundleFile.Kind
    public var size: Int64
    public var sha256: String
    /// Lines counted at inspection (a `.gz` log's once inflated, up to the per-file cap).
    public var lineCount = 0
    /// A log past its bundle's indexing budget: stored and downloadable, not searchable.
    public var skipsIndexing = false

    /// Whether the indexer should read it.
    public var isIndexed: Bool { kind != .log || skipsIndexing }
}
