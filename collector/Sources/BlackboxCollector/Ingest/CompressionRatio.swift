/// The one rule against decompression bombs, wherever compressed input is inflated (zip entries,
/// gzip, deflate and brotli bodies, symbol files, sentry-cli's chunks): past its first MiB, what was
/// inflated may be at most `limit` (`maxCompressionRatio`, 200 by default) times what arrived.
enum CompressionRatio {
    static let freeBytes = 1 << 20

    static func exceeds(inflated: Int, compressed: Int, limit: Int) -> Bool {
        inflated > freeBytes && inflated / max(compressed, 1) > limit
    }
}
