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
    /// For a plain value of at most 16 bytes: how the writer makes the error from the bytes a log call
    /// copied instead of holding its box.
    let inlineValue: InlineErrorValue?
    /// Its size, or nil: read by the caller apart from `inlineValue`, whose copy retains a closure.
    let inlineSize: Int?
    /// How the writer prints a value of the type in place (a copy, or in the error's box): nil for a
    /// class, or where values are not read from boxes (`KnownErrorTypes.copiesValuesFromBox`).
    let valueDescription: ValueDescription?
    let gates = CaptureGates()

    init(
        type: ObjectIdentifier, name: String, isReportable: Bool, isClass: Bool = false, describesItself: Bool = true,
        inlineValue: InlineErrorValue? = nil, valueDescription: ValueDescription? = nil
    ) {
        self.type = type
        self.name = name
        self.isReportable = isReportable
        self.isClass = isClass
        self.describesItself = describesItself
        self.inlineValue = inlineValue
        self.inlineSize = inlineValue?.size
        self.valueDescription = valueDescription
        let entry = EncodedMetadata.errorEntryBytes(typeName: name)
        let bytes = UnsafeMutableRawBufferPointer.allocate(byteCount: entry.count, alignment: 1)
        _ = bytes.initializeMemory(as: UInt8.self, from: entry)
        errorEntry = UnsafeRawBufferPointer(bytes)
    }

    deinit { errorEntry.deallocate() }
}

/// How an error of a plain type (no references, at most 16 bytes) is copied out of its box on the
/// caller, and described in place on the writer (`DeferredError`), which makes the error again only
/// where it needs the error itself.
struct InlineErrorValue: Sendable {
    static let capacity = 16
    let size: Int
    /// The error from its value's bytes.
    let make: @Sendable (UnsafeRawPointer) -> any Error

    static func of<Value: Error>(_ type: Value.Type) -> InlineErrorValue? {
        // `_isPOD`: the stdlib's own test for a value without references (no public spelling yet).
        // Aligned to at most a word, as the copies are: the writer reads them in place.
        guard _isPOD(Value.self), MemoryLayout<Value>.size <= capacity,
            MemoryLayout<Value>.alignment <= MemoryLayout<UInt>.alignment
        else { return nil }
        return InlineErrorValue(size: MemoryLayout<Value>.size) { $0.loadUnaligned(as: Value.self) }
    }
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
    /// Whether a value is where `boxValueOffset` says in its box, checked once: values are copied
    /// from there (`InlineErrorValue`) only then.
    let copiesValuesFromBox: Bool
    /// Where an error's value begins in its box: after the heap object's two words, the type and the
    /// `Error` conformance (the runtime's `SwiftError`), for values aligned to at most 16 bytes.
    static let boxValueOffset = 4 * MemoryLayout<UInt>.size

    init() {
        keys = .allocate(capacity: Self.capacity)
        keys.initialize(repeating: UnsafeAtomic<UInt>.Storage(0), count: Self.capacity)
        facts = .allocate(capacity: Self.capacity)
        facts.initialize(repeating: nil, count: Self.capacity)
        readsTypeFromBox = Self.boxHoldsType()
        copiesValuesFromBox = readsTypeFromBox && Self.boxHoldsValues()
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
        guard let borrowed = BorrowedError(error) else { preconditionFailure("an error's reference is never 0") }
        return withExtendedLifetime(error) { facts(of: borrowed) }
    }

    /// The same for a log call's error (the handler's path, where no copy of the error is made).
    @inline(__always)
    func facts(of error: BorrowedError) -> (facts: Unmanaged<ErrorTypeFacts>, owned: Bool) {
        if readsTypeFromBox, let found = facts(of: Self.boxedType(in: error.box)),
            !found._withUnsafeGuaranteedRef(\.isClass)
        {
            return (found, false)
        }
        return learnedFacts(of: error.error)
    }

    /// A type seen for the first time, or a class's error (its box holds the static type).
    @inline(never)
    private func learnedFacts(of error: any Error) -> (facts: Unmanaged<ErrorTypeFacts>, owned: Bool) {
        let type = ObjectIdentifier(Swift.type(of: error))
        if let found = facts(of: type) { return (found, false) }
        return learn(
            ErrorTypeFacts(
                type: type, name: String(reflecting: Swift.type(of: error)),
                isReportable: error is any ReportableError, isClass: Swift.type(of: error) is AnyClass,
                describesItself: Self.describesItself(opened: error),
                inlineValue: copiesValuesFromBox ? Self.inlineValue(opened: error) : nil,
                valueDescription: copiesValuesFromBox ? Self.valueDescription(opened: error) : nil))
    }

    private static func inlineValue<Value: Error>(opened value: Value) -> InlineErrorValue? {
        InlineErrorValue.of(Value.self)
    }

    /// For a value read where `boxValueOffset` says (aligned to at most 16 bytes there), not a class's.
    private static func valueDescription<Value: Error>(opened value: Value) -> ValueDescription? {
        guard !(Value.self is AnyClass), MemoryLayout<Value>.alignment <= 16 else { return nil }
        return ValueDescription.of(Value.self)
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
    private static func boxedType(in box: UnsafeRawPointer) -> ObjectIdentifier {
        ObjectIdentifier(
            unsafeBitCast(
                box.load(fromByteOffset: 2 * MemoryLayout<UInt>.size, as: UnsafeRawPointer.self), to: Any.Type.self))
    }

    private struct Probe: Error { let value = 7 }
    private enum OtherProbe: Error { case one }

    private static func boxHoldsType() -> Bool {
        guard MemoryLayout<any Error>.size == MemoryLayout<UInt>.size else { return false }
        let probes = probeErrors()
        return withExtendedLifetime(probes) {
            func boxedType(of error: any Error) -> ObjectIdentifier? {
                BorrowedError(error).map { Self.boxedType(in: $0.box) }
            }
            return boxedType(of: probes[0]) == ObjectIdentifier(Probe.self)
                && boxedType(of: probes[1]) == ObjectIdentifier(OtherProbe.self)
        }
    }

    @inline(never)
    private static func probeErrors() -> [any Error] { [Probe(), OtherProbe.one] }

    private struct WideProbe: Error {
        let first: UInt64 = 0x0123_4567_89AB_CDEF
        let second: UInt64 = 0xFEDC_BA98_7654_3210
    }
    private enum NarrowProbe: Error { case value(UInt8) }

    /// Whether values sit at `boxValueOffset`: two probes' bytes, read there, are their own.
    private static func boxHoldsValues() -> Bool {
        let wide: any Error = WideProbe()
        let narrow: any Error = NarrowProbe.value(0xA5)
        return withExtendedLifetime((wide, narrow)) {
            func bytes(of error: any Error, count: Int) -> [UInt8] {
                BorrowedError(error).map { Array(UnsafeRawBufferPointer(start: $0.inlineValueBytes, count: count)) }
                    ?? []
            }
            return bytes(of: wide, count: 16) == withUnsafeBytes(of: WideProbe()) { Array($0) }
                && bytes(of: narrow, count: 1) == [0xA5]
        }
    }

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
