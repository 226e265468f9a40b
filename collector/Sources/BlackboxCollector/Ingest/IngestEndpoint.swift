import Hummingbird

/// One HTTP receiver of uploads in one format: its routes, over the stages every format shares
/// (`IngestService`: admission, reception, the format's inspection, the group commit). Blackbox's
/// bundles (`BundleEndpoint`) and Sentry's envelopes (`SentryEndpoint`) are two. A new receiver is
/// a file with its conformance (and its format's, when the format is new) and one line where
/// `CollectorServer` lists its endpoints; its stored blobs are then read back through its format.
protocol IngestEndpoint: Sendable {
    associatedtype Format: BundleFormat
    /// What it receives, and what reads its stored blobs back (`BundleReader`).
    var format: Format { get }
    func register(on router: Router<CollectorContext>)
}
