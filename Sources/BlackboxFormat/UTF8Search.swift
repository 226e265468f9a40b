/// Substring search over UTF-8 bytes, for the ASCII markers grouping looks for in function names and
/// paths (`closure #`, `/checkouts/`, `generic specialization <`). The standard library's
/// `contains(_:)` and `firstRange(of:)` compare Characters through a generic searcher: with several
/// markers per frame and every frame of every stored report, they were 3 % of the collector's CPU
/// while it stored Sentry events (perf, 2026-12-05). A byte match can differ from a Character match
/// only where a combining mark follows the match, which no marker here cares about.
public enum UTF8Search {
    public static func firstRange<Text: StringProtocol>(of needle: String, in text: Text) -> Range<Text.Index>? {
        let search = { (haystack: UnsafeBufferPointer<UInt8>) in first(needle, in: haystack) }
        let utf8 = text.utf8
        guard let offsets = utf8.withContiguousStorageIfAvailable(search) ?? Array(utf8).withUnsafeBufferPointer(search)
        else { return nil }
        let lower = utf8.index(utf8.startIndex, offsetBy: offsets.lowerBound)
        return lower..<utf8.index(lower, offsetBy: offsets.count)
    }

    public static func contains(_ needle: String, in text: some StringProtocol) -> Bool {
        firstRange(of: needle, in: text) != nil
    }

    /// Whether `bytes` (JSON text, say) hold `needle`'s UTF-8 bytes.
    public static func contains(_ needle: String, inBytes bytes: UnsafeRawBufferPointer) -> Bool {
        first(needle, in: bytes.assumingMemoryBound(to: UInt8.self)) != nil
    }

    private static func first(_ needle: String, in haystack: UnsafeBufferPointer<UInt8>) -> Range<Int>? {
        needle.utf8.withContiguousStorageIfAvailable { first($0, in: haystack) }
            ?? Array(needle.utf8).withUnsafeBufferPointer { first($0, in: haystack) }
    }

    /// The offsets of the first occurrence of `needle` in `haystack`; an empty needle is found at 0.
    static func first(_ needle: UnsafeBufferPointer<UInt8>, in haystack: UnsafeBufferPointer<UInt8>) -> Range<Int>? {
        guard let head = needle.first else { return 0..<0 }
        guard haystack.count >= needle.count else { return nil }
        let lastStart = haystack.count - needle.count
        var start = 0
        while start <= lastStart {
            guard let found = haystack[start...lastStart].firstIndex(of: head) else { return nil }
            if haystack[found..<found + needle.count].elementsEqual(needle) { return found..<found + needle.count }
            start = found + 1
        }
        return nil
    }
}
