import Synchronization

/// What the limiter counts as one call site: a file and line, and for a captured error the site it
/// was thrown at (or the request's route) and its type. Hashed as a value: a key made as text
/// printed the error's type and site on every call, most of what a rate-limited capture cost.
struct CallSiteKey: Hashable, Sendable {
    var file: String
    var line: UInt
    var throwSite: ThrowSite? = nil
    var route: String? = nil
    var errorType: ObjectIdentifier? = nil

    /// The lines, the error type and the source texts' lengths, mixed into one word, and the route:
    /// the source texts themselves are left to `==`, which finds a call site's `#fileID` and
    /// `#function` equal at once (the same literal every time). Hashing them, then hashing each part
    /// apart, was most of what a rate-limited capture cost the caller (issue 52). The mixed parts come
    /// from the program, never from a client; the route may (an unmatched route is the client's
    /// path), so it is hashed whole, and a flood of paths cannot pile up in one bucket.
    func hash(into hasher: inout Hasher) {
        var mixed = UInt64(line) &* 0x9E37_79B9_7F4A_7C15
        mixed = (mixed ^ UInt64(file.utf8.count)) &* 0xBF58_476D_1CE4_E5B9
        if let errorType { mixed = (mixed ^ UInt64(UInt(bitPattern: errorType))) &* 0x94D0_49BB_1331_11EB }
        if let throwSite {
            mixed ^=
                UInt64(throwSite.line) | UInt64(throwSite.fileID.utf8.count) << 24
                | UInt64(throwSite.function.utf8.count) << 44
        }
        hasher.combine(mixed)
        if let route { hasher.combine(route) }
    }
}

/// At most one report per call site per interval; counts the failures in between.
///
/// A site's budget (`Budget`) is decided without a lock: the call that finds the budget due wins it
/// with a compare-exchange, the others count themselves. Only finding the budget takes the lock, and a
/// thread that met the site lately skips even that (`RecentCallSites`).
final class CallSiteLimiter: Sendable {
    static let shared = CallSiteLimiter()
    /// A key may hold a request's route, which for an unmatched route is the client's path: the table
    /// starts over when full rather than grow with them (a few extra reports, never unbounded memory).
    static let maxSites = 4096

    /// One site's budget, shared by the table and the threads' recent-site caches.
    final class Budget: Sendable {
        /// When the next report is due (coarse monotonic nanoseconds); 0 for a site never reported.
        let dueAt = Atomic<UInt64>(0)
        /// Failures since the last report.
        let suppressed = Atomic<Int>(0)

        /// Whether to report now, and the failures suppressed since the last report.
        func decide(now: UInt64, interval: UInt64) -> (due: Bool, suppressed: Int) {
            let dueAt = dueAt.load(ordering: .relaxed)
            if now >= dueAt,
                self.dueAt.compareExchange(expected: dueAt, desired: now &+ interval, ordering: .relaxed)
                    .exchanged
            {
                return (true, suppressed.exchange(0, ordering: .relaxed))
            }
            return (false, suppressed.wrappingAdd(1, ordering: .relaxed).newValue)
        }
    }

    private static let generations = Atomic<UInt64>(0)
    /// Changes when the table starts over: the threads' caches then forget this limiter's budgets.
    /// Drawn from one counter for all limiters, so that no two share a value.
    let generation = Atomic<UInt64>(CallSiteLimiter.generations.wrappingAdd(1, ordering: .relaxed).newValue)
    private let budgets = Mutex<[CallSiteKey: Budget]>([:])

    /// Whether to report now, and the failures suppressed since the last report.
    func shouldReport(_ key: CallSiteKey) -> (due: Bool, suppressed: Int) {
        budget(for: key).decide(now: coarseMonotonicNanoseconds(), interval: Assertions.reportIntervalNanoseconds)
    }

    /// The same for a log call's captured error, whose key is built only when this thread has not met
    /// the site lately: most calls at a busy site are counted for ~20 ns (issue 52).
    func shouldReport(
        file: String, line: UInt, throwSite: ThrowSite?, errorType: ObjectIdentifier
    ) -> (due: Bool, suppressed: Int) {
        let identity = CallSiteIdentity(file: file, line: line, throwSite: throwSite, errorType: errorType)
        let now = coarseMonotonicNanoseconds()
        let interval = Assertions.reportIntervalNanoseconds
        let generation = generation.load(ordering: .relaxed)
        return RecentCallSites.withCurrent { recent in
            if let decision = recent.decide(for: identity, generation: generation, now: now, interval: interval) {
                return decision
            }
            let key = CallSiteKey(file: file, line: line, throwSite: throwSite, errorType: errorType)
            let budget = budget(for: key)
            recent.remember(budget, for: identity, holding: key, generation: generation)
            return budget.decide(now: now, interval: interval)
        }
    }

    /// The same for a log call's captured error at a site without a gate: decided under the
    /// limiter's lock, through the site's gate made with its budget (`CaptureGates`), so that the
    /// site's next calls before the report is due only read the gate. `now`: the wall clock.
    func shouldReport(
        gatingIn gates: CaptureGates, file: String, line: UInt, errorType: ObjectIdentifier, now: UInt64
    ) -> (due: Bool, suppressed: Int) {
        let generation = generation.load(ordering: .relaxed)
        let key = CallSiteKey(file: file, line: line, errorType: errorType)
        let budget = budget(for: key)
        guard let gate = gates.gate(for: key, budget: budget, of: self, generation: generation) else {
            return budget.decide(now: coarseMonotonicNanoseconds(), interval: Assertions.reportIntervalNanoseconds)
        }
        return gate._withUnsafeGuaranteedRef { $0.decide(at: now) }
    }

    private func budget(for key: CallSiteKey) -> Budget {
        budgets.withLock { budgets in
            if let budget = budgets[key] { return budget }
            if budgets.count >= Self.maxSites {
                budgets.removeAll(keepingCapacity: true)
                generation.store(Self.generations.wrappingAdd(1, ordering: .relaxed).newValue, ordering: .relaxed)
            }
            let budget = Budget()
            budgets[key] = budget
            return budget
        }
    }
}
