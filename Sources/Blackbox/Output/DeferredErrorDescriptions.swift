import Atomics
import Synchronization

/// The errors of swift-log calls (`error:`) whose text the writer thread prints.
///
/// Swift prints an error without a `description` by reflection: 6-7 µs, four times a whole log call
/// (issue 52 allows a call with `error:` 10 % more on the caller's thread). So the caller writes the
/// error's type name into its record (`ErrorTypeFacts`, named once per type), marks the record
/// (`RecordFlags.describesErrorLater`) and leaves the error here under the record's position; the
/// writer takes it when it formats the record and prints the line with the error's description in
/// its place (`DescribedRecord`).
///
/// The trade, documented in docs/assertions-and-errors.md: the journal keeps the type name, not the
/// description. A crash or `kill -9` in the writer's lag (normally well under a millisecond) recovers
/// the line with `error=<its type>`, and a crash report's log tail, read from the journal, shows the
/// type too.
///
/// One slot per 64 bytes of the journal's ring, made at the first error (an eighth of the journal's
/// size): a record with an error is at least 64 bytes (its header and the `error` entry), so two
/// records in the ring at once never share a slot, and no lock is needed. A table under a lock cost
/// the caller ~0.5 µs, most of it waiting for the writer taking from it. The journal orders the
/// accesses: the caller fills the slot before it commits the record, the writer describes the error
/// after it has seen the commit and before it releases the space, and the space is reserved again
/// only after that release. Records recovered from a dead process were never here and keep their
/// type names.
///
/// Who frees the error: a described error stays in its slot, marked, and the next caller whose
/// record covers the slot releases it. The app allocated the error on the calling thread; freed by
/// the writer, its memory went to the writer's allocator cache, and the caller's next error came
/// from malloc's slow path (issue 52: a call with a self-describing error cost its caller ~1,060 or
/// ~1,240 ns, bimodally; released by the caller, ~1,030 ns steadily). The writer releases what
/// callers have not reached within `sweepInterval` of the first error it described after its last
/// sweep (`releaseDescribed`), so an error lives about that long at most after its line is written.
///
/// A slot is a word: 0, an error's reference (held by a caller, not yet described), or the reference
/// with its low bit set (described: whoever swaps it out releases it). A reference freshly held never
/// has the bit, so a sweep's compare-exchange cannot take a caller's new error for an old one at the
/// same address.
///
/// A plain value (no references, at most 16 bytes: most error enums and small structs) is not held
/// here at all: its bytes travel at the end of its record with its type's facts (`RecordErrorValue`),
/// and the writer describes the copy in place (`DeferredError`). Holding a reference cost the caller
/// a retain, an exchange on the slot and a release a lap later (~30 ns, a third of what issue 52
/// allows a call with an error); a copy costs a few stores into the record the call writes anyway,
/// and the box the app made is freed at the end of its call, where it was made.
/// A record that carries a value leaves the slots it covers as they are: a described reference an
/// earlier lap left there is released by the next reference held in its slot, or by the sweep.
final class DeferredErrorDescriptions: Sendable {
    static let bytesPerSlot = 64
    /// How long a described error waits for a caller to release it before the writer does.
    static let sweepInterval: UInt64 = 1_000_000_000
    private static let described: UInt = 1
    private let mask: UInt64
    /// The slots' address once the first error came (0 before): published once by a compare-exchange
    /// and freed with the object, so reading it takes no retain (a lazily made class instance cost
    /// every call a retain and a release on one shared count).
    private let slotsAddress = Atomic<UInt>(0)

    private var slotCount: Int { Int(mask + 1) / Self.bytesPerSlot }

    init(journalCapacity: UInt64) {
        precondition(
            journalCapacity.nonzeroBitCount == 1 && journalCapacity >= UInt64(Self.bytesPerSlot),
            "a journal's capacity is a power of two")
        mask = journalCapacity - 1
    }

    deinit {
        guard let slots = UnsafeMutableRawPointer(bitPattern: slotsAddress.load(ordering: .acquiring)) else { return }
        for index in 0..<slotCount { ErrorReference.release(word(index, in: slots).load(ordering: .acquiring)) }
        slots.deallocate()
    }

    private func slot(for position: UInt64) -> Int { Int((position & mask) / UInt64(Self.bytesPerSlot)) }

    private var slots: UnsafeMutableRawPointer? {
        UnsafeMutableRawPointer(bitPattern: slotsAddress.load(ordering: .acquiring))
    }

    private func word(_ index: Int, in slots: UnsafeMutableRawPointer) -> UnsafeAtomic<UInt> {
        UnsafeAtomic(
            at: (slots + index * MemoryLayout<UInt>.size).assumingMemoryBound(to: UnsafeAtomic<UInt>.Storage.self))
    }

    private func makeSlots() -> UnsafeMutableRawPointer {
        let byteCount = slotCount * MemoryLayout<UInt>.size
        let made = UnsafeMutableRawPointer.allocate(byteCount: byteCount, alignment: MemoryLayout<UInt>.alignment)
        made.bindMemory(to: UnsafeAtomic<UInt>.Storage.self, capacity: slotCount)
            .initialize(repeating: UnsafeAtomic<UInt>.Storage(0), count: slotCount)
        let (won, current) = slotsAddress.compareExchange(
            expected: 0, desired: UInt(bitPattern: made), ordering: .acquiringAndReleasing)
        guard !won, let current = UnsafeMutableRawPointer(bitPattern: current) else { return made }
        made.deallocate()
        return current
    }

    /// Swaps out and releases a reference an earlier lap left in `cell` (a sweep may take it at the
    /// same time: exchanged). Read first: most covered slots are empty, and an exchange on each cost
    /// more than the rest of holding an error.
    private static func releaseEarlierReference(in cell: UnsafeAtomic<UInt>) {
        if cell.load(ordering: .relaxed) != 0 { ErrorReference.release(cell.exchange(0, ordering: .acquiring)) }
    }

    /// Before the record at `position`, `size` bytes long, is committed: holds `error` by reference
    /// (a plain value travels in its record instead: `RecordErrorValue`). Releases the errors held by
    /// reference in earlier laps in the slots the record covers: their records are written (the space
    /// could not be reserved otherwise). A slot the record covers only in part is left: the next
    /// record, which may be another caller's, can begin in it.
    func hold(_ error: BorrowedError, for position: UInt64, size: Int) {
        let slots = slots ?? makeSlots()
        let cell = word(slot(for: position), in: slots)
        ErrorReference.release(cell.exchange(error.retainedReference, ordering: .acquiringAndReleasing))
        let end = position + UInt64(size)
        var start = (position | UInt64(Self.bytesPerSlot - 1)) + 1
        while start + UInt64(Self.bytesPerSlot) <= end {
            Self.releaseEarlierReference(in: word(slot(for: start), in: slots))
            start += UInt64(Self.bytesPerSlot)
        }
    }

    /// By the writer, for a committed record marked `describesErrorLater` that carries no value of its
    /// own: `body` with the record's error, which stays in its slot, marked described; nil when the
    /// slot has none (the record came from a dead process).
    func withDeferredError<Result>(for position: UInt64, _ body: (DeferredError) -> Result) -> Result? {
        guard let slots else { return nil }
        let cell = word(slot(for: position), in: slots)
        let bits = cell.load(ordering: .acquiring)
        guard bits != 0, bits & Self.described == 0 else { return nil }
        let result = body(DeferredError(reference: bits))
        cell.store(bits | Self.described, ordering: .releasing)
        return result
    }

    /// The same with the error itself (tests).
    func withError<Result>(for position: UInt64, _ body: (any Error) -> Result) -> Result? {
        withDeferredError(for: position) { deferred in deferred.withError(body) }
    }

    /// By the writer: releases the described errors no caller has released (`sweepInterval`). A
    /// caller racing for a slot either swapped it out first or finds it empty.
    func releaseDescribed() {
        guard let slots else { return }
        for index in 0..<slotCount {
            let cell = word(index, in: slots)
            let bits = cell.load(ordering: .relaxed)
            guard bits & Self.described != 0 else { continue }
            if cell.compareExchange(expected: bits, desired: 0, ordering: .acquiring).exchanged {
                ErrorReference.release(bits)
            }
        }
    }

    /// The errors held by reference now, described or not (tests).
    var heldCount: Int {
        guard let slots else { return 0 }
        return (0..<slotCount).count { word($0, in: slots).load(ordering: .acquiring) != 0 }
    }

    /// What the writer prints for an error: its description, cut to `limit` bytes.
    static func describe(_ error: any Error, limit: Int) -> String {
        cut(String(describing: error), to: limit)
    }

    static func cut(_ text: String, to limit: Int) -> String {
        guard text.utf8.count > limit else { return text }
        return withUTF8Bytes(text) {
            String(decoding: $0[..<utf8Prefix(UnsafeRawBufferPointer($0), limit)], as: UTF8.self)
        }
    }
}

/// A record with its error's description where the caller wrote the error's type name: a copy,
/// because the record in the journal must stay as it was committed (checksummed, and what recovery
/// replays).
struct DescribedRecord: ~Copyable {
    private var buffer = OutputBuffer(capacity: 4096)

    /// `record` with `error`'s description (`DeferredErrorDescriptions.describe`, at most `limit` bytes)
    /// in place of the type name the caller wrote.
    mutating func copy(of record: RecordView, describing error: any Error, limit: Int) -> RecordView {
        copy(of: record, describing: DeferredErrorDescriptions.describe(error, limit: limit))
    }

    /// The same for the writer's error, described in place (`DeferredError`). `facts`: its type's.
    mutating func copy(
        of record: RecordView, describing error: DeferredError, facts: ErrorTypeFacts, limit: Int
    ) -> RecordView {
        copy(of: record, describing: DeferredErrorDescriptions.cut(error.description(facts: facts), to: limit))
    }

    /// `record` with the value of its last `error` metadata entry (the one the log call added after the
    /// app's own metadata, which may have an `error` key too) replaced by `description`; `record`
    /// itself when it has no such entry.
    mutating func copy(of record: RecordView, describing description: String) -> RecordView {
        var errorValue: UnsafeRawBufferPointer?
        for (key, value) in record.metadata where key.elementsEqual("error".utf8) { errorValue = value }
        guard let errorValue, let valueStart = errorValue.baseAddress else { return record }
        let start = valueStart - record.base
        let end = start + errorValue.count
        let descriptionCount = description.utf8.count
        buffer.removeAll()
        buffer.append(UnsafeRawBufferPointer(start: record.base, count: start))
        withUTF8Bytes(description) { buffer.append(UnsafeRawBufferPointer($0)) }
        buffer.append(UnsafeRawBufferPointer(start: record.base + end, count: record.length - end))
        // The lengths that changed: the value's (just before it), the metadata's and the record's.
        let copy = buffer.base
        let metadataCount = Int(copy.load(fromByteOffset: RecordLayout.metadataLength, as: UInt32.self))
        copy.storeBytes(of: UInt32(descriptionCount), toByteOffset: start - 4, as: UInt32.self)
        copy.storeBytes(
            of: UInt32(metadataCount - errorValue.count + descriptionCount), toByteOffset: RecordLayout.metadataLength,
            as: UInt32.self)
        copy.storeBytes(of: UInt32(buffer.count), toByteOffset: RecordLayout.length, as: UInt32.self)
        return RecordView(base: UnsafeRawPointer(copy))
    }
}

/// An error as one word that owns a reference, for slots swapped atomically.
///
/// Hand-written because an atomic holds words, not existentials: `any Error` is one reference to
/// the error's box (`(any Error)?` is a word, nil being 0; checked by the test suite), so its bits
/// move in and out of an `Optional` without reference counting.
enum ErrorReference {
    /// The error's reference, retained once for the word.
    static func retainedBits(of error: any Error) -> UInt {
        var owned: (any Error)? = error
        return withUnsafeMutableBytes(of: &owned) { bytes in
            let bits = bytes.load(as: UInt.self)
            bytes.storeBytes(of: 0, as: UInt.self)  // `owned` is nil now: its reference belongs to `bits`
            return bits
        }
    }

    /// The error's reference, not retained (0 for nil): valid while `error` is. Through an optional:
    /// an `any Error` passed as a generic argument is opened (the bytes would be the value's), and kept
    /// closed by `as any Error` it was copied.
    static func borrowedBits(of error: borrowing (any Error)?) -> UInt {
        withUnsafeBytes(of: error) { $0.load(as: UInt.self) }
    }

    /// The error of `bits`, taking over the reference `bits` owns.
    static func owning(_ bits: UInt) -> any Error {
        var owned: (any Error)? = nil
        withUnsafeMutableBytes(of: &owned) { $0.storeBytes(of: bits & ~1, as: UInt.self) }
        guard let error = owned else { preconditionFailure("an error's reference is never 0") }
        return error
    }

    /// `body` with the error of `bits` (described or not); `bits` keeps its reference.
    static func borrowing<Result>(_ bits: UInt, _ body: (any Error) -> Result) -> Result {
        var owned: (any Error)? = nil
        withUnsafeMutableBytes(of: &owned) { $0.storeBytes(of: bits & ~1, as: UInt.self) }
        defer { withUnsafeMutableBytes(of: &owned) { $0.storeBytes(of: 0, as: UInt.self) } }
        guard let error = owned else { preconditionFailure("an error's reference is never 0") }
        return body(error)
    }

    /// Gives up the reference of `bits` (described or not; 0 is none).
    static func release(_ bits: UInt) {
        guard bits != 0 else { return }
        _ = owning(bits)
    }
}

/// A record's error as the writer finds it in its slot: a plain value's copy with its type's facts,
/// or the error's reference. Described in place where its type allows (`ValueDescription`): a copy
/// is not made into an error again, and a held error's value is read in its box.
struct DeferredError {
    private enum Storage {
        case copy(UnsafeRawPointer, Unmanaged<ErrorTypeFacts>)
        case reference(UInt)
    }

    private let storage: Storage

    init(copy: UnsafeRawPointer, facts: Unmanaged<ErrorTypeFacts>) { storage = .copy(copy, facts) }
    init(reference: UInt) { storage = .reference(reference) }

    /// `body` with the facts of the error's type: the copy's own, or the table's.
    func withFacts<Result>(_ body: (ErrorTypeFacts) -> Result) -> Result {
        switch storage {
        case .copy(_, let facts): facts._withUnsafeGuaranteedRef(body)
        case .reference(let bits): ErrorReference.borrowing(bits) { KnownErrorTypes.shared.withFacts(of: $0, body) }
        }
    }

    /// `body` with the error: the copy made into one again, or the one held.
    func withError<Result>(_ body: (any Error) -> Result) -> Result {
        switch storage {
        case .copy(let bytes, let facts):
            guard let copied = facts._withUnsafeGuaranteedRef(\.inlineValue) else {
                preconditionFailure("a copied error's facts say how to make it")
            }
            return body(copied.make(bytes))
        case .reference(let bits): return ErrorReference.borrowing(bits, body)
        }
    }

    /// The error's description, as `String(describing:)` prints it. `facts`: its type's.
    func description(facts: ErrorTypeFacts) -> String {
        if let described = facts.valueDescription {
            switch storage {
            case .copy(let bytes, _): return described.ofValue(bytes)
            case .reference(let bits):
                if let box = UnsafeRawPointer(bitPattern: bits & ~1) {
                    return described.ofValue(box + KnownErrorTypes.boxValueOffset)
                }
            }
        }
        return withError { String(describing: $0) }
    }
}

/// A log call's error by its reference, not retained: valid for the call (swift-log's `LogEvent`
/// holds the error). Passed down the record's path in place of the `any Error`, which Swift copied at
/// each binding and closure that met it: a retain and a release each, three pairs a call (~25 ns of
/// the ~90 issue 52 allows a call with an error).
struct BorrowedError {
    /// The error's box: a pointer, so that an absent error is a null word.
    let box: UnsafeRawPointer
    /// Its type's facts when the value is copied instead of held (`ErrorTypeFacts.inlineSize`): set by
    /// the handler, which looked them up, for facts a table keeps (never freed).
    var inlineFacts: Unmanaged<ErrorTypeFacts>?

    init?(_ error: borrowing (any Error)?) {
        guard let box = UnsafeRawPointer(bitPattern: ErrorReference.borrowedBits(of: error)) else { return nil }
        self.box = box
    }

    var reference: UInt { UInt(bitPattern: box) }

    /// The value's bytes in the error's box (`KnownErrorTypes.boxValueOffset`, checked at start).
    var inlineValueBytes: UnsafeRawPointer { box + KnownErrorTypes.boxValueOffset }

    /// The reference, retained once for its new holder.
    var retainedReference: UInt {
        _ = Unmanaged<AnyObject>.fromOpaque(box).retain()
        return reference
    }

    /// The error itself, owned: for the rarer paths (a capture, a line written on the caller's thread).
    /// A property, not a closure: a captured stack shows no frame of it.
    var error: any Error { ErrorReference.owning(retainedReference) }
}
