import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Where a log call's error of one type was captured lately, per call site: the site's budget
/// (`CallSiteLimiter.Budget`), read by the next call of the site without a lock, a thread's table
/// or a count of its own.
///
/// A call at a site whose report is not due yet (the budget's `dueAt` is ahead) is counted by the
/// writer thread, which sees the record's error anyway (`RecordFlags.captureCountedByWriter`): the
/// caller only reads the gate. Deciding on the caller (the limiter's per-thread cache, a clock read,
/// an atomic count) was ~45 ns of a ~1 µs call with an error, issue 52's bar being 10 % of the call.
/// When a report is due the call goes the limiter's whole way, as a call at a site without a gate
/// does: the stack must be taken on the caller's thread.
///
/// A gate stands for one site and one type: a new type at a busy site finds no gate and is decided
/// in full (so its first error is reported), as is an error that knows where it was thrown
/// (`ReportableError`: its throw site is part of the limiter's key) and a call in a request whose
/// scope noted another site for the type (`Blackbox.thrown`). Inside a scope a call is gated as
/// outside: its site is its own, and so is its budget. Gates are made once and kept for the
/// process's life, at most `capacity` per type: a type logged at more sites is decided in full at
/// the others.
final class CaptureGates: Sendable {
    static let capacity = 4
    /// `Unmanaged<CaptureGate>` bits, 0 while free; set once by a compare-exchange.
    private let slots: InlineArray<4, Atomic<UInt>> = InlineArray { _ in Atomic(0) }

    deinit {
        for index in slots.indices {
            let bits = slots[index].load(ordering: .acquiring)
            if bits != 0 { Unmanaged<CaptureGate>.fromOpaque(UnsafeRawPointer(bitPattern: bits)!).release() }
        }
    }

    /// The gate of the call site `file` and `line` (the log call's own `#fileID` and `#line`).
    @inline(__always)
    func gate(file: String, line: UInt) -> Unmanaged<CaptureGate>? {
        let identity = CaptureGate.Identity(file: file, line: line)
        return firstGate { $0.identity == identity }
    }

    /// The gate of a record's call site, for the writer: compared by the text it holds.
    func gate(file: UnsafeRawBufferPointer, line: UInt) -> Unmanaged<CaptureGate>? {
        firstGate { $0.isSite(file: file, line: line) }
    }

    @inline(__always)
    private func firstGate(where matches: (CaptureGate) -> Bool) -> Unmanaged<CaptureGate>? {
        for index in slots.indices {
            let bits = slots[index].load(ordering: .acquiring)
            guard bits != 0 else { return nil }
            let gate = Unmanaged<CaptureGate>.fromOpaque(UnsafeRawPointer(bitPattern: bits)!)
            if gate._withUnsafeGuaranteedRef(matches) { return gate }
        }
        return nil
    }

    /// Whether every gate is taken: a site without one is then decided in full for good.
    var isFull: Bool { slots[slots.indices.last!].load(ordering: .relaxed) != 0 }

    /// The gate for the site of `key` with its budget in `limiter`: the site's own, a new one, or nil
    /// when the gates are all taken.
    func gate(
        for key: CallSiteKey, budget: CallSiteLimiter.Budget, of limiter: CallSiteLimiter, generation: UInt64
    ) -> Unmanaged<CaptureGate>? {
        guard CallSiteIdentity.isAvailable else { return nil }
        if let gate = gate(file: key.file, line: key.line) { return gate }
        let made = Unmanaged.passRetained(
            CaptureGate(key: key, budget: budget, limiter: limiter, generation: generation))
        let bits = UInt(bitPattern: made.toOpaque())
        for index in slots.indices {
            let (exchanged, found) = slots[index].compareExchange(
                expected: 0, desired: bits, ordering: .acquiringAndReleasing)
            if exchanged { return made }
            let other = Unmanaged<CaptureGate>.fromOpaque(UnsafeRawPointer(bitPattern: found)!)
            if other._withUnsafeGuaranteedRef({ $0.identity == made._withUnsafeGuaranteedRef(\.identity) }) {
                made.release()  // another thread made this site's gate first
                return other
            }
        }
        made.release()
        return nil
    }
}

/// One site's gate for one error type: the limiter's budget for the site, and the key whose strings
/// keep the identity's words meaningful (see `CallSiteIdentity`).
final class CaptureGate: Sendable {
    struct Identity: Equatable {
        let file0: UInt
        let file1: UInt
        let line: UInt

        @inline(__always)
        init(file: String, line: UInt) {
            (file0, file1) = CallSiteIdentity.words(file)
            self.line = line
        }
    }

    let identity: Identity
    let key: CallSiteKey
    let budget: CallSiteLimiter.Budget
    private let limiter: CallSiteLimiter
    /// The limiter's generation the budget belongs to: after the limiter starts over, the gate is
    /// not trusted.
    private let generation: UInt64

    init(key: CallSiteKey, budget: CallSiteLimiter.Budget, limiter: CallSiteLimiter, generation: UInt64) {
        identity = Identity(file: key.file, line: key.line)
        self.key = key
        self.budget = budget
        self.limiter = limiter
        self.generation = generation
    }

    /// When the budget was last decided through the gate and when its next report is due, on the
    /// wall clock: a log call reads that clock for its record anyway, and the budget's own clock
    /// (monotonic) was a second clock read per call. Set by every decision made through the gate
    /// (`decide`).
    private let decidedAtWallClock = Atomic<UInt64>(0)
    private let dueAtWallClock = Atomic<UInt64>(0)

    /// Whether a call at `now` (its record's timestamp) finds its report not due: counted by the
    /// writer, nothing else to do. A wall-clock step is harmless: back before the last decision or
    /// forward past the due time, it opens the gate, and the call is decided by the budget's monotonic
    /// clock (`decide`), which sets the gate's times again.
    @inline(__always)
    func isClosed(at now: UInt64) -> Bool {
        now < dueAtWallClock.load(ordering: .relaxed) && now >= decidedAtWallClock.load(ordering: .relaxed)
            && generation == limiter.generation.load(ordering: .relaxed)
    }

    /// The site's budget decided, for a call whose gate was open, and the gate's due time set from it.
    func decide(at now: UInt64) -> (due: Bool, suppressed: Int) {
        let monotonicNow = coarseMonotonicNanoseconds()
        let decision = budget.decide(now: monotonicNow, interval: Assertions.reportIntervalNanoseconds)
        let dueAt = budget.dueAt.load(ordering: .relaxed)
        decidedAtWallClock.store(now, ordering: .relaxed)
        dueAtWallClock.store(now &+ (dueAt > monotonicNow ? dueAt - monotonicNow : 0), ordering: .relaxed)
        return decision
    }

    fileprivate func isSite(file: UnsafeRawBufferPointer, line: UInt) -> Bool {
        // A record keeps at most `LoggingCore.maxFileNameBytes` of the file's name.
        guard line == key.line else { return false }
        return withUTF8Bytes(key.file) { name in
            name.count >= file.count && (file.isEmpty || memcmp(name.baseAddress!, file.baseAddress!, file.count) == 0)
        }
    }

    /// The writer's count of a call the gate let through uncounted (`RecordFlags.captureCountedByWriter`).
    func countSuppressed() {
        budget.suppressed.wrappingAdd(1, ordering: .relaxed)
    }
}
