/// Which image holds an address, by binary search over the images' ranges sorted by start: a report
/// may list 4,096 images and thousands of frames, and a scan per frame cost seconds of the
/// collector's CPU per upload (security reviews 2026-11-25, finding 9, and 2026-11-27, finding 7).
/// The loader never maps two images over each other; where a report says it did (a hostile or broken
/// one), the image listed first keeps the overlap and the later one is left out of the lookup, so the
/// lookup stays logarithmic whatever the report says.
public struct ImageRanges: Sendable {
    /// (start, end, index in the report's images), by start, none overlapping.
    private let sorted: [(start: UInt64, end: UInt64, index: Int)]

    public init(_ ranges: [(start: UInt64, end: UInt64)]) {
        let byStart = ranges.enumerated().filter { $0.element.start < $0.element.end }
            .map { (start: $0.element.start, end: $0.element.end, index: $0.offset) }
            .sorted { ($0.start, $0.index) < ($1.start, $1.index) }
        var kept: [(start: UInt64, end: UInt64, index: Int)] = []
        kept.reserveCapacity(byStart.count)
        for range in byStart {
            guard let last = kept.last, range.start < last.end else {
                kept.append(range)
                continue
            }
            if range.index < last.index { kept[kept.count - 1] = range }
        }
        sorted = kept
    }

    public func index(containing address: UInt64) -> Int? {
        // The last range starting at or below the address.
        var (low, high) = (0, sorted.count)
        while low < high {
            let middle = (low + high) / 2
            if sorted[middle].start <= address { low = middle + 1 } else { high = middle }
        }
        guard low > 0 else { return nil }
        let candidate = sorted[low - 1]
        return address < candidate.end ? candidate.index : nil
    }
}
