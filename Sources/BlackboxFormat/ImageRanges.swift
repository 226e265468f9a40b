/// Which image holds an address, by binary search: a report may list 4,096 images and thousands of
/// frames, and a scan per frame cost seconds of the collector's CPU per upload (security reviews
/// 2026-11-25, finding 9, and 2026-11-27, finding 7). The loader never maps two images over each
/// other; where a report says it did (a hostile or broken one), an address belongs to the first image
/// listed that holds it, as a scan in the report's order would say, and the lookup stays logarithmic
/// whatever the report says.
public struct ImageRanges: Sendable {
    /// Disjoint address ranges by start, each with the index of the image it belongs to.
    private let segments: [(start: UInt64, end: UInt64, index: Int)]

    public init(_ ranges: [(start: UInt64, end: UInt64)]) {
        // A sweep over every start and end: between two of them, the owner is the lowest index of the
        // ranges that cover the stretch (`active`, kept sorted; it holds one index unless ranges overlap).
        var events: [(at: UInt64, opens: Bool, index: Int)] = []
        for (index, range) in ranges.enumerated() where range.start < range.end {
            events.append((range.start, true, index))
            events.append((range.end, false, index))
        }
        events.sort { ($0.at, $0.opens ? 1 : 0, $0.index) < ($1.at, $1.opens ? 1 : 0, $1.index) }
        var active: [Int] = []
        var segments: [(start: UInt64, end: UInt64, index: Int)] = []
        var position: UInt64 = 0
        for event in events {
            if event.at > position, let owner = active.first {
                if let last = segments.last, last.index == owner, last.end == position {
                    segments[segments.count - 1].end = event.at
                } else {
                    segments.append((position, event.at, owner))
                }
            }
            position = event.at
            let place = Self.insertionPoint(of: event.index, in: active)
            if event.opens {
                active.insert(event.index, at: place)
            } else if place < active.count, active[place] == event.index {
                active.remove(at: place)
            }
        }
        self.segments = segments
    }

    public func index(containing address: UInt64) -> Int? {
        // The last segment starting at or below the address.
        var (low, high) = (0, segments.count)
        while low < high {
            let middle = (low + high) / 2
            if segments[middle].start <= address { low = middle + 1 } else { high = middle }
        }
        guard low > 0 else { return nil }
        let candidate = segments[low - 1]
        return address < candidate.end ? candidate.index : nil
    }

    private static func insertionPoint(of value: Int, in sorted: [Int]) -> Int {
        var (low, high) = (0, sorted.count)
        while low < high {
            let middle = (low + high) / 2
            if sorted[middle] < value { low = middle + 1 } else { high = middle }
        }
        return low
    }
}
