import Atomics
import Synchronization

/// What a log call needs of an error's type, found once per type: its name (naming a type demangles
/// it, ~1 µs) and whether it is a `ReportableError` (asking the runtime costs ~150 ns a call).
struct ErrorTypeFacts: Sendable {
    /// The type's identity, for the rate limit and the request's notes.
    let type: ObjectIdentifier
    let name: String
    let isReportable: Bool

    static func of(_ error: any Error) -> ErrorTypeFacts {
        let type = ObjectIdentifier(Swift.type(of: error))
        if let facts = KnownErrorTypes.shared.facts(of: type) { return facts }
        let facts = ErrorTypeFacts(
            type: type, name: String(reflecting: Swift.type(of: error)), isReportable: error is any ReportableError)
        KnownErrorTypes.shared.learn(facts)
        return facts
    }
}

/// The error types met so far, read on every log call with an error: without a lock for the first
/// `capacity / 2` types, which stay for the process's life (a `Mutex` and a dictionary lookup were a
/// third of what the call's error cost its caller, issue 52). A program with more error types than
/// that (generic error types make one per argument) finds the others in a table under a lock, which
/// starts over when full.
final class KnownErrorTypes: @unchecked Sendable {
    static let shared = KnownErrorTypes()
    static let capacity = 256
    static let overflowCapacity = 1024

    /// Open addressing by the type's address; a slot's key is 0 until its facts are in place, and
    /// neither changes after its releasing store, so a reader that sees the key may read the facts
    /// (why the class is `@unchecked Sendable`: writers hold `writers`, readers only read published slots).
    private let keys: UnsafeMutablePointer<UnsafeAtomic<UInt>.Storage>
    private let facts: UnsafeMutablePointer<ErrorTypeFacts?>
    /// Serialises writers; the count of fixed slots taken, and the overflow table.
    private let writers = Mutex<(taken: Int, overflow: [ObjectIdentifier: ErrorTypeFacts])>((0, [:]))

    init() {
        keys = .allocate(capacity: Self.capacity)
        keys.initialize(repeating: UnsafeAtomic<UInt>.Storage(0), count: Self.capacity)
        facts = .allocate(capacity: Self.capacity)
        facts.initialize(repeating: nil, count: Self.capacity)
    }

    deinit {
        keys.deinitialize(count: Self.capacity)
        keys.deallocate()
        facts.deinitialize(count: Self.capacity)
        facts.deallocate()
    }

    private func key(at slot: Int) -> UnsafeAtomic<UInt> { UnsafeAtomic(at: keys + slot) }

    private static func firstSlot(of type: ObjectIdentifier) -> Int {
        // Metadata addresses are at least 8-byte aligned; the multiply spreads neighbouring ones.
        Int(truncatingIfNeeded: (UInt64(UInt(bitPattern: type)) &* 0x9E37_79B9_7F4A_7C15) >> 56)
            & (capacity - 1)
    }

    func facts(of type: ObjectIdentifier) -> ErrorTypeFacts? {
        let wanted = UInt(bitPattern: type)
        var slot = Self.firstSlot(of: type)
        for _ in 0..<Self.capacity {
            let key = key(at: slot).load(ordering: .acquiring)
            if key == wanted { return facts[slot] }
            if key == 0 { break }
            slot = (slot + 1) & (Self.capacity - 1)
        }
        return writers.withLock { $0.overflow[type] }
    }

    func learn(_ learned: ErrorTypeFacts) {
        let wanted = UInt(bitPattern: learned.type)
        writers.withLock { writers in
            guard writers.taken < Self.capacity / 2 else {
                // Past half full, probes grow long: the rest go to the table under the lock.
                if writers.overflow.count >= Self.overflowCapacity { writers.overflow.removeAll(keepingCapacity: true) }
                writers.overflow[learned.type] = learned
                return
            }
            var slot = Self.firstSlot(of: learned.type)
            while true {
                let key = key(at: slot).load(ordering: .relaxed)
                if key == wanted { return }  // another thread learned it first
                if key == 0 { break }
                slot = (slot + 1) & (Self.capacity - 1)
            }
            facts[slot] = learned
            key(at: slot).store(wanted, ordering: .releasing)
            writers.taken += 1
        }
    }
}
