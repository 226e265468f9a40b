/// What the collector keeps, as one facade over the parts below (each a small protocol of its own,
/// so that a caller names the part it needs). The embedded `SQLiteStore` and the scale-out
/// `PostgresStore` implement all of them; `StoreContractTests` holds both to the same contract.
/// Domain decisions (defaults, grouping, counting) are made before a store is called, in
/// `IngestPlan`: stores translate to SQL and nothing more.
public protocol CollectorStore: KeyStore, SessionStore, BundleIndex, ProjectReader, LogIndex, RetentionStore,
    SymbolIndex, SymbolicationStore, RegroupingStore, TriageStore, AlertStore, ReleaseStore, UsageStore
{
    func migrate() async throws
    /// Storage is reachable (for `/ready`).
    func ping() async throws
}
