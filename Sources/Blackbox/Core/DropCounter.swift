import Atomics

/// Lines dropped because the journal was full, and where in the stream the gap is.
///
/// A producer that drops a line notes the journal's reservation end at that moment: every record
/// before it was reserved before the drop, every record from it on after. The writer writes the
/// "dropped N lines" notice right before the first record at or past that point, so the notice sits
/// exactly where lines are missing; with no record after the gap yet, it writes it once the journal
/// is drained (space has returned).
final class DropCounter: Sendable {
    private let count = ManagedAtomic<UInt64>(0)
    private let gapPosition = ManagedAtomic<UInt64>(.max)

    func record(at position: UInt64) {
        _ = gapPosition.compareExchange(expected: .max, desired: position, ordering: .relaxed)
        count.wrappingIncrement(ordering: .releasing)
    }

    /// Where the oldest unreported gap is (`.max` when there is none). One load per batch.
    var pendingGap: UInt64 { gapPosition.load(ordering: .acquiring) }

    /// Takes the count to report; the next drop starts a new gap.
    func take() -> UInt64 {
        gapPosition.store(.max, ordering: .relaxed)
        return count.exchange(0, ordering: .acquiringAndReleasing)
    }

    var hasPending: Bool { count.load(ordering: .relaxed) > 0 }
}
