import Synchronization

/// How many uploads are being received, in all and per project. `enter` refuses past either limit
/// instead of queueing, so a flood is answered at once (503, resend later) rather than held in
/// memory, and one project's key (the ingest key is public) cannot take every slot from the others.
final class UploadSlots: Sendable {
    private struct Counts {
        var total = 0
        var byProject: [Int64: Int] = [:]
    }
    private let counts = Mutex(Counts())

    enum Refusal: Error {
        case full
        case projectFull
    }

    /// Takes a slot; returns how many are taken now.
    @discardableResult
    func enter(project: Int64, limit: Int, perProject: Int) throws(Refusal) -> Int {
        try counts.withLock { (counts: inout Counts) throws(Refusal) in
            guard counts.total < limit else { throw .full }
            guard counts.byProject[project, default: 0] < perProject else { throw .projectFull }
            counts.total += 1
            counts.byProject[project, default: 0] += 1
            return counts.total
        }
    }

    /// Gives a slot back; returns how many are taken now.
    @discardableResult
    func leave(project: Int64) -> Int {
        counts.withLock { counts in
            counts.total -= 1
            let left = counts.byProject[project, default: 1] - 1
            counts.byProject[project] = left > 0 ? left : nil
            return counts.total
        }
    }
}
