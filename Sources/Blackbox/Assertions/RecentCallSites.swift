#if canImport(Glibc)
    import Glibc
#endif

/// A call site as the words its parts are made of: a string's two words (for a `#fileID` literal,
/// its address and length), the line, the error type's address. Compared without reading any text.
///
/// Two strings with the same words hold the same text only while the first one lives (its storage
/// could be freed and another string made at the same address): so an identity is only ever compared
/// with the identity of a key that `RecentCallSites` keeps alive beside it.
struct CallSiteIdentity: Equatable {
    private var file0: UInt
    private var file1: UInt
    private var line: UInt
    private var errorType: UInt
    private var siteFile0: UInt = 0
    private var siteFile1: UInt = 0
    private var siteLine: UInt = .max
    private var siteFunction0: UInt = 0
    private var siteFunction1: UInt = 0

    init(file: String, line: UInt, throwSite: ThrowSite?, errorType: ObjectIdentifier) {
        (file0, file1) = Self.words(file)
        self.line = line
        self.errorType = UInt(bitPattern: errorType)
        if let throwSite {
            (siteFile0, siteFile1) = Self.words(throwSite.fileID)
            siteLine = throwSite.line
            (siteFunction0, siteFunction1) = Self.words(throwSite.function)
        }
    }

    /// A string's two words (see the type's note on when they identify its text).
    @inline(__always)
    static func words(_ string: String) -> (UInt, UInt) {
        withUnsafeBytes(of: string) { bytes in
            (bytes.load(as: UInt.self), bytes.load(fromByteOffset: MemoryLayout<UInt>.size, as: UInt.self))
        }
    }

    /// Strings are two words on the platforms Blackbox runs on (64-bit Linux); elsewhere no identity
    /// is trusted and every call takes the limiter's lock.
    /// (Computed: a stored static is a `swift_once` on every call; this folds to a constant.)
    static var isAvailable: Bool { MemoryLayout<String>.size == 2 * MemoryLayout<UInt>.size }
}

/// The call sites the current thread met lately, with their budgets: a log call at a busy site finds
/// its budget here, without building its key, hashing it or taking the limiter's lock. One small table
/// per thread (freed with the thread), no sharing: nothing here needs an atomic. The identities are
/// apart from the rest so that looking one up copies no reference.
final class RecentCallSites {
    private static let capacity = 8
    /// Searched on every call: a plain buffer (an array of optionals compared element by element, and
    /// a class's exclusivity checks on it, were most of the look-up). Slot `i` is in use when
    /// `generations[i]` is not 0 (generations start at 1).
    private let identities = UnsafeMutablePointer<CallSiteIdentity>.allocate(capacity: capacity)
    private let generations = UnsafeMutablePointer<UInt64>.allocate(capacity: capacity)
    /// Keep the strings each identity was made of alive (see `CallSiteIdentity`).
    @exclusivity(unchecked) private var keys = [CallSiteKey?](repeating: nil, count: capacity)
    @exclusivity(unchecked) private var budgets = [CallSiteLimiter.Budget?](repeating: nil, count: capacity)
    /// `budgets`' references without their counts, used while `budgets` holds them: a budget looked
    /// up and returned was a retain and a release per call on a count every thread shares.
    private let unretainedBudgets = UnsafeMutablePointer<Unmanaged<CallSiteLimiter.Budget>>.allocate(capacity: capacity)
    @exclusivity(unchecked) private var next = 0

    init() {
        generations.initialize(repeating: 0, count: Self.capacity)
    }

    deinit {
        for index in 0..<Self.capacity where generations[index] != 0 { (identities + index).deinitialize(count: 1) }
        identities.deallocate()
        generations.deallocate()
        unretainedBudgets.deallocate()
    }

    /// The budget of `identity`'s site decided (`CallSiteLimiter.Budget.decide`); nil when this thread
    /// has not met the site lately.
    func decide(
        for identity: CallSiteIdentity, generation: UInt64, now: UInt64, interval: UInt64
    ) -> (due: Bool, suppressed: Int)? {
        guard CallSiteIdentity.isAvailable else { return nil }
        for index in 0..<Self.capacity where generations[index] == generation && identities[index] == identity {
            return unretainedBudgets[index]._withUnsafeGuaranteedRef { $0.decide(now: now, interval: interval) }
        }
        return nil
    }

    func remember(
        _ budget: CallSiteLimiter.Budget, for identity: CallSiteIdentity, holding key: CallSiteKey, generation: UInt64
    ) {
        guard CallSiteIdentity.isAvailable else { return }
        var index = next
        for slot in 0..<Self.capacity where generations[slot] != 0 && identities[slot] == identity { index = slot }
        if index == next { next = (next + 1) % Self.capacity }
        if generations[index] == 0 {
            (identities + index).initialize(to: identity)
        } else {
            identities[index] = identity
        }
        generations[index] = generation
        keys[index] = key
        budgets[index] = budget
        unretainedBudgets[index] = Unmanaged.passUnretained(budget)
    }

    /// Runs `body` with the calling thread's table, made at its first use.
    static func withCurrent<Result>(_ body: (RecentCallSites) -> Result) -> Result {
        let table: Unmanaged<RecentCallSites>
        if let stored = pthread_getspecific(key) {
            table = Unmanaged.fromOpaque(stored)
        } else {
            table = Unmanaged.passRetained(RecentCallSites())
            pthread_setspecific(key, table.toOpaque())
        }
        return table._withUnsafeGuaranteedRef(body)
    }

    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key) { table in
            guard let table else { return }
            Unmanaged<RecentCallSites>.fromOpaque(table).release()
        }
        return key
    }()
}
