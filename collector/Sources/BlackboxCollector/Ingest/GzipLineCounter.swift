import BlackboxCompression

/// Counts the lines of a `.gz` log while its bytes stream past the inspector, so that the log takes
/// its real share of the bundle's indexing budget. Counted as the per-file cap instead, five
/// compressed archives used up a bundle's budget, and the logs after them were stored but never
/// searchable (an app whose uploads fell behind sends its archives compressed, many to a bundle).
///
/// Bounded like the indexer's own reading: it stops after `maxLines` lines or `maxBytes` inflated
/// bytes, and at damaged data (which the indexer meets again and reports); then the file counts as
/// the cap, as before.
struct GzipLineCounter {
    private let inflater: GzipInflater?
    private let maxLines: Int
    private let maxBytes: Int
    private var inflatedBytes = 0
    private var lines = 0
    private var stopped: Bool

    private struct Enough: Error {}

    init(maxLines: Int, maxBytes: Int) {
        inflater = try? GzipInflater()
        stopped = inflater == nil
        self.maxLines = maxLines
        self.maxBytes = maxBytes
    }

    /// Inflates `bytes` and counts their lines; returns how many bytes they inflated to.
    mutating func feed(_ bytes: UnsafeRawBufferPointer) -> Int {
        guard !stopped, let inflater else { return 0 }
        let before = inflatedBytes
        do {
            try inflater.feed(bytes) { piece in
                inflatedBytes += piece.count
                lines += piece.withUnsafeBytes { BundleInspector.countNewlines($0) }
                if lines >= maxLines || inflatedBytes > maxBytes { throw Enough() }
            }
        } catch {
            stopped = true
        }
        return inflatedBytes - before
    }

    /// The file's lines (a last line without a newline included), or `maxLines` if counting stopped
    /// early.
    var count: Int { stopped ? maxLines : lines + 1 }
}
