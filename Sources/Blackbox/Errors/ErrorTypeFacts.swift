import Atomics
import Synchronization

/// What a log call needs of an error's type, found once per type: its name (naming a type demangles
/// it, ~1 µs), whether it is a `ReportableError` (asking the runtime costs ~150 ns a call), and the
/// capture gates of the sites that logged it (`CaptureGates`).
///
/// Facts are never freed once a table holds them (at most `KnownErrorTypes.capacity / 2 +
/// overflowCapacity`), so a log call reads them through an unretained reference: a retain and a
/// release per call on one object that every thread shares bounce its count between cores.
final class ErrorTypeFacts: Sendable {
    /// The type's identity, for the rate limit and the request's notes.
    let type: ObjectIdentifier
    let name: String
    /// The record's `error` entry naming the type (`EncodedMetadata.errorEntry`), copied into a
    /// record whole (never written after `init`, hence safe to share).
    nonisolated(unsafe) let errorEntry: UnsafeRawBufferPointer
    let isReportable: Bool
    /// A class's error box holds the static type; its instance may be of a subclass.
    let isClass: Bool
    /// Whether Swift prints the error through a description of its own, not by reflection (several
    /// microseconds a value): the writer, far behind, prints only the type of one that does not.
    let describesItself: Bool
    let gates = CaptureGates()

    init(
        type: ObjectIdentifier, name: String, isReportable: Bool, isClass: Bool = false, describesItself: Bool = true
    ) {
        self.type = type
        self.name = name
        self.isReportable = isReportable
        self.isClass = isClass
        self.describesItself = describesItself
        let entry = EncodedMetadata.errorEntryBytes(typeName: name)
        let bytes = UnsafeMutableRawBufferPointer.allocate(byteCount: entry.count, alignment: 1)
        _ = bytes.initializeMemory(as: UInt8.self, from: entry)
        errorEntry = UnsafeRawBufferPointer(bytes)
    }

    deinit { errorEntry.deallocate() }
}

/// The error types met so far, read on every log call with an error: without a lock for the first
/// `capacity / 2` types, then in a table under a lock up to `overflowCapacity` more (generic error
/// types make one per argument); past that a type's facts are made at each call and not kept.
final class KnownErrorTypes: @unchecked Sendable {
    static let shared = KnownErrorTypes()
    static let capacity = 256
    static let overflowCapacity = 1024

    /// Open addressing by the type's address; a slot's key is 0 until its facts are in place, and
    /// neither changes after its releasing store, so a reader that sees the key may read the facts
    /// (why the class is `@unchecked Sendable`: writers hold `writers`, readers only read published slots).
    private let keys: UnsafeMutablePointer<UnsafeAtomic<UInt>.Storage>
    private let facts: UnsafeMutablePointer<Unmanaged<ErrorTypeFacts>?>
    /// Serialises writers; the count of fixed slots taken, and the overflow table.
    private let writers = Mutex<(taken: Int, overflow: [ObjectIdentifier: Unmanaged<ErrorTypeFacts>])>((0, [:]))
    /// Whether an error's type can be read from its box (`facts(of:)`), checked once.
    let readsTypeFromBox: Bool

    init() {
        keys = .allocate(capacity: Self.capacity)
        keys.initialize(repeating: UnsafeAtomic<UInt>.Storage(0), count: Self.capacity)
        facts = .allocate(capacity: Self.capacity)
        facts.initialize(repeating: nil, count: Self.capacity)
        readsTypeFromBox = Self.boxHoldsType()
    }

    deinit {
        // Only tests make tables of their own, and release them when no call can read them.
        for index in 0..<Self.capacity { facts[index]?.release() }
        writers.withLock { writers in
            for facts in writers.overflow.values { facts.release() }
        }
        keys.deinitialize(count: Self.capacity)
        keys.deallocate()
        facts.deinitialize(count: Self.capacity)
        facts.deallocate()
    }

    /// The facts of `error`'s type, learned at its first error. Used unretained: the table keeps
    /// them for its life (see `ErrorTypeFacts`); past its capacity the one reference is the caller's
    /// (`Unmanaged.release` when `owned`).
    @inline(__always)
    func facts(of error: any Error) -> (facts: Unmanaged<ErrorTypeFacts>, owned: Bool) {
        if readsTypeFromBox, let found = facts(of: Self.boxedType(of: error)),
            !found._withUnsafeGuaranteedRef(\.isClass)
        {
            return (found, false)
        }
        let type = ObjectIdentifier(Swift.type(of: error))
        if let found = facts(of: type) { return (found, false) }
        return learn(
            ErrorTypeFacts(
                type: type, name: String(reflecting: Swift.type(of: error)),
                isReportable: error is any ReportableError, isClass: Swift.type(of: error) is AnyClass,
                describesItself: Self.describesItself(opened: error)))
    }

    /// Asked of the error's own type (the existential opened): Foundation, imported in this module,
    /// makes `any Error` look `CustomStringConvertible` to the compiler.
    private static func describesItself<Value>(opened value: Value) -> Bool {
        value is any CustomStringConvertible || value is any CustomDebugStringConvertible
            || value is any TextOutputStreamable
    }

    /// `body` with the facts of `error`'s type (`facts(of:)`), borrowed for the call.
    @inline(__always)
    func withFacts<Result>(of error: any Error, _ body: (ErrorTypeFacts) -> Result) -> Result {
        let (facts, owned) = facts(of: error)
        defer { if owned { facts.release() } }
        return facts._withUnsafeGuaranteedRef(body)
    }

    /// The type in `error`'s box. Swift on Linux keeps every error in a box whose third word is its
    /// value's type (the runtime's `SwiftError`: a heap object's two words, then the type); reading it
    /// is a load where `type(of:)` opened the existential through the runtime (~25 ns of a ~1 µs log
    /// call, issue 52). `boxHoldsType` checks the layout once against `type(of:)`, and a class's
    /// error is asked as before.
    @inline(__always)
    private static func boxedType(of error: any Error) -> ObjectIdentifier {
        // `as any Error` keeps the existential closed: passed as a generic argument it is opened,
        // and the bytes would be the value's.
        let box = withUnsafeBytes(of: error as any Error) { $0.load(as: UnsafeRawPointer.self) }
        return ObjectIdentifier(
            unsafeBitCast(
                box.load(fromByteOffset: 2 * MemoryLayout<UInt>.size, as: UnsafeRawPointer.self), to: Any.Type.self))
    }

    private struct Probe: Error { let value = 7 }
    private enum OtherProbe: Error { case one }

    private static func boxHoldsType() -> Bool {
        guard MemoryLayout<any Error>.size == MemoryLayout<UInt>.size else { return false }
        let probes = probeErrors()
        return withExtendedLifetime(probes) {
            boxedType(of: probes[0]) == ObjectIdentifier(Probe.self)
                && boxedType(of: probes[1]) == ObjectIdentifier(OtherProbe.self)
        }
    }

    @inline(never)
    private static func probeErrors() -> [any Error] { [Probe(), OtherProbe.one] }

    private func key(at slot: Int) -> UnsafeAtomic<UInt> { UnsafeAtomic(at: keys + slot) }

    private static func firstSlot(of type: ObjectIdentifier) -> Int {
        // Metadata addresses are at least 8-byte aligned; the multiply spreads neighbouring ones.
        Int(truncatingIfNeeded: (UInt64(UInt(bitPattern: type)) &* 0x9E37_79B9_7F4A_7C15) >> 56)
            & (capacity - 1)
    }

    func facts(of type: ObjectIdentifier) -> Unmanaged<ErrorTypeFacts>? {
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

    /// Keeps `learned` unless another thread learned its type first; the facts kept, unretained, or
    /// `learned` itself owned by the caller when the tables are full.
    @discardableResult
    func learn(_ learned: ErrorTypeFacts) -> (facts: Unmanaged<ErrorTypeFacts>, owned: Bool) {
        let wanted = UInt(bitPattern: learned.type)
        return writers.withLock { writers in
            var slot = Self.firstSlot(of: learned.type)
            while true {
                let key = key(at: slot).load(ordering: .relaxed)
                if key == wanted, let kept = facts[slot] { return (kept, false) }  // another thread learned it first
                if key == 0 { break }
                slot = (slot + 1) & (Self.capacity - 1)
            }
            guard writers.taken < Self.capacity / 2 else {
                // Past half full, probes grow long: the rest go to the table under the lock.
                if let kept = writers.overflow[learned.type] { return (kept, false) }
                guard writers.overflow.count < Self.overflowCapacity else { return (.passRetained(learned), true) }
                let kept = Unmanaged.passRetained(learned)
                writers.overflow[learned.type] = kept
                return (kept, false)
            }
            let kept = Unmanaged.passRetained(learned)
            facts[slot] = kept
            key(at: slot).store(wanted, ordering: .releasing)
            writers.taken += 1
            return (kept, false)
        }
    }
}
