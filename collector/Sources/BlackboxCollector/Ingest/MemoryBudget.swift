import Synchronization

/// Bytes that uploads being inspected may hold in memory at once (manifests and reports are kept
/// to be decoded), shared by all of them: with many uploads at once the per-bundle limit alone would
/// add up to gigabytes. An upload that finds the budget spent is answered 503 `too_many_uploads`
/// and resent later.
final class MemoryBudget: Sendable {
    let limit: Int
    private let used = Atomic<Int>(0)

    init(limit: Int) { self.limit = limit }

    /// Takes `bytes` if they fit.
    func take(_ bytes: Int) -> Bool {
        if used.wrappingAdd(bytes, ordering: .relaxed).newValue <= limit { return true }
        used.wrappingSubtract(bytes, ordering: .relaxed)
        return false
    }

    func giveBack(_ bytes: Int) { used.wrappingSubtract(bytes, ordering: .relaxed) }

    var inUse: Int { used.load(ordering: .relaxed) }
}
