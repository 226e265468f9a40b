import NIOCore
import NIOPosix
import Synchronization

/// The threads every upload format inspects on (unzipping, decoding JSON, converting events), shared
/// fairly between projects: one project's uploads never hold more than `perProject` of them, so with
/// one project flooding the collector with the costliest bodies its key may send (the ingest key is
/// public: it ships in every app), another project's upload still finds a thread at once. There is
/// one thread more than a project may take; a project alone uses all but that one, and the kernel
/// shares the cores between whatever runs.
///
/// Waiting inspections start in turn by project (the project running the fewest goes first, then
/// the one that waited longest), each project's in the order they came. A waiting request that is
/// cancelled (its client went away) leaves the queue.
///
/// Its own threads, not `NIOThreadPool.singleton`'s: file reads and symbol work use those, and must
/// not wait behind inspections, nor inspections behind them.
final class InspectionPool: Sendable {
    let threads: Int
    let perProject: Int
    private let pool: NIOThreadPool
    private let state: Mutex<FairShare<CheckedContinuation<Void, any Error>>>
    private let completed = Atomic<Int>(0)

    /// Process-wide, like the other pools: as many threads as cores, plus the one no project may take.
    static let shared = InspectionPool(perProject: System.coreCount)

    init(perProject: Int) {
        self.perProject = max(1, perProject)
        threads = self.perProject + 1
        pool = NIOThreadPool(numberOfThreads: threads)
        pool.start()
        state = Mutex(FairShare(threads: threads, perProject: self.perProject))
    }

    /// Inspections that have run to their end here, for tests that a format's work ran on the pool.
    var completedJobs: Int { completed.load(ordering: .relaxed) }

    /// Runs `work` on one of the pool's threads once `project` may have one.
    func run<Result: Sendable>(project: Int64, _ work: @escaping @Sendable () throws -> Result) async throws -> Result {
        let ticket = try await admit(project)
        defer { release(ticket) }
        let result = try await pool.runIfActive(work)
        completed.add(1, ordering: .relaxed)
        return result
    }

    private func admit(_ project: Int64) async throws -> FairShareTicket {
        let ticket = state.withLock { $0.newTicket(project: project) }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                switch state.withLock({ $0.arrive(ticket, continuation) }) {
                case .start: continuation.resume()
                case .cancelled: continuation.resume(throwing: CancellationError())
                case .wait: break
                }
            }
        } onCancel: {
            state.withLock { $0.cancel(ticket) }?.resume(throwing: CancellationError())
        }
        return ticket
    }

    private func release(_ ticket: FairShareTicket) {
        state.withLock { $0.finish(ticket) }?.resume()
    }
}

/// One inspection's place in `FairShare`.
struct FairShareTicket: Hashable, Sendable {
    let id: Int
    let project: Int64
}

/// The pool's bookkeeping as a plain value: which inspections run, which wait, and who goes next.
/// Every mutation returns what the caller must do (resume a continuation), so that nothing resumes
/// under the lock. Invariant after each mutation: no waiting inspection could start.
struct FairShare<Continuation> {
    typealias Ticket = FairShareTicket

    enum Arrival: Equatable {
        case start
        case wait
        /// Cancelled before it arrived: resume it with the cancellation.
        case cancelled
    }

    private struct Waiter {
        let ticket: Ticket
        let continuation: Continuation
    }

    let threads: Int
    let perProject: Int
    private var nextID = 0
    /// At most `threads` tickets: a project's count is read off them.
    private var running: Set<Ticket> = []
    /// In arrival order; short (bounded by the upload slots), so a list is enough.
    private var waiting: [Waiter] = []
    /// Cancelled before they arrived: a cancellation handler runs at once when the task was cancelled
    /// already. Cleared on arrival, so nothing stays.
    private var cancelledEarly: Set<Ticket> = []

    init(threads: Int, perProject: Int) {
        self.threads = threads
        self.perProject = perProject
    }

    var runningCount: Int { running.count }
    var waitingProjects: [Int64] { waiting.map(\.ticket.project) }

    mutating func newTicket(project: Int64) -> Ticket {
        nextID += 1
        return Ticket(id: nextID, project: project)
    }

    mutating func arrive(_ ticket: Ticket, _ continuation: Continuation) -> Arrival {
        if cancelledEarly.remove(ticket) != nil { return .cancelled }
        if mayStart(ticket.project) {
            start(ticket)
            return .start
        }
        waiting.append(Waiter(ticket: ticket, continuation: continuation))
        return .wait
    }

    /// The continuation to resume with the cancellation, when the inspection was waiting. A handler
    /// runs only while `arrive` may still be ahead or the ticket waits or has just started.
    mutating func cancel(_ ticket: Ticket) -> Continuation? {
        if let index = waiting.firstIndex(where: { $0.ticket == ticket }) {
            return waiting.remove(at: index).continuation
        }
        if !running.contains(ticket) { cancelledEarly.insert(ticket) }
        return nil
    }

    /// Ends a running inspection; returns the continuation of the one that starts in its place.
    mutating func finish(_ ticket: Ticket) -> Continuation? {
        guard running.remove(ticket) != nil else { return nil }
        return next()
    }

    private func runningCount(of project: Int64) -> Int { running.count { $0.project == project } }

    private func mayStart(_ project: Int64) -> Bool {
        running.count < threads && runningCount(of: project) < perProject
    }

    private mutating func start(_ ticket: Ticket) { running.insert(ticket) }

    /// The waiter whose project runs the fewest inspections (the earliest among equals), if any may
    /// start.
    private mutating func next() -> Continuation? {
        var chosen: Int?
        var chosenLoad = Int.max
        for index in waiting.indices where mayStart(waiting[index].ticket.project) {
            let load = runningCount(of: waiting[index].ticket.project)
            if load < chosenLoad { (chosen, chosenLoad) = (index, load) }
        }
        guard let chosen else { return nil }
        let waiter = waiting.remove(at: chosen)
        start(waiter.ticket)
        return waiter.continuation
    }
}
