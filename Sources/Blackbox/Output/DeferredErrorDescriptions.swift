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
        guard
            let slots = UnsafeMutablePointer<UnsafeAtomic<UInt>.Storage>(
                bitPattern: slotsAddress.load(ordering: .acquiring))
        else { return }
        for index in 0..<slotCount {
            ErrorReference.release(UnsafeAtomic(at: slots + index).load(ordering: .acquiring))
        }
        slots.deinitialize(count: slotCount)
        slots.deallocate()
    }

    private func slot(for position: UInt64) -> Int { Int((position & mask) / UInt64(Self.bytesPerSlot)) }

    private var slots: UnsafeMutablePointer<UnsafeAtomic<UInt>.Storage>? {
        UnsafeMutablePointer(bitPattern: slotsAddress.load(ordering: .acquiring))
    }

    private func makeSlots() -> UnsafeMutablePointer<UnsafeAtomic<UInt>.Storage> {
        let made = UnsafeMutablePointer<UnsafeAtomic<UInt>.Storage>.allocate(capacity: slotCount)
        made.initialize(repeating: UnsafeAtomic<UInt>.Storage(0), count: slotCount)
        let (won, current) = slotsAddress.compareExchange(
            expected: 0, desired: UInt(bitPattern: made), ordering: .acquiringAndReleasing)
        guard !won, let current = UnsafeMutablePointer<UnsafeAtomic<UInt>.Storage>(bitPattern: current) else {
            return made
        }
        made.deinitialize(count: slotCount)
        made.deallocate()
        return current
    }

    /// Before the record at `position`, `size` bytes long, is committed. Releases the errors of
    /// earlier laps in the slots the record covers: their records are written (the space could not
    /// be reserved otherwise). A slot the record covers only in part is left: the next record, which
    /// may be another caller's, can begin in it.
    func hold(_ error: any Error, for position: UInt64, size: Int) {
        let slots = slots ?? makeSlots()
        let held = ErrorReference.retainedBits(of: error)
        ErrorReference.release(
            UnsafeAtomic(at: slots + slot(for: position)).exchange(held, ordering: .acquiringAndReleasing))
        let end = position + UInt64(size)
        var start = (position | UInt64(Self.bytesPerSlot - 1)) + 1
        while start + UInt64(Self.bytesPerSlot) <= end {
            let covered = UnsafeAtomic<UInt>(at: slots + slot(for: start))
            if covered.load(ordering: .relaxed) != 0 {
                ErrorReference.release(covered.exchange(0, ordering: .acquiring))
            }
            start += UInt64(Self.bytesPerSlot)
        }
    }

    /// By the writer, for a committed record marked `describesErrorLater`: `body` with the record's
    /// error, which stays in its slot, marked described; nil when the slot has none (the record came
    /// from a dead process).
    func withError<Result>(for position: UInt64, _ body: (any Error) -> Result) -> Result? {
        guard let slots else { return nil }
        let cell = UnsafeAtomic<UInt>(at: slots + slot(for: position))
        let bits = cell.load(ordering: .acquiring)
        guard bits != 0, bits & Self.described == 0 else { return nil }
        let result = ErrorReference.borrowing(bits, body)
        cell.store(bits | Self.described, ordering: .releasing)
        return result
    }

    /// By the writer: releases the described errors no caller has released (`sweepInterval`). A
    /// caller racing for a slot either swapped it out first or finds it empty.
    func releaseDescribed() {
        guard let slots else { return }
        for index in 0..<slotCount {
            let cell = UnsafeAtomic<UInt>(at: slots + index)
            let bits = cell.load(ordering: .relaxed)
            guard bits & Self.described != 0 else { continue }
            if cell.compareExchange(expected: bits, desired: 0, ordering: .acquiring).exchanged {
                ErrorReference.release(bits)
            }
        }
    }

    /// The errors held now, described or not (tests).
    var heldCount: Int {
        guard let slots else { return 0 }
        return (0..<slotCount).count { UnsafeAtomic<UInt>(at: slots + $0).load(ordering: .acquiring) != 0 }
    }

    /// What the writer prints for an error: its description, cut to `limit` bytes.
    static func describe(_ error: any Error, limit: Int) -> String {
        let text = String(describing: error)
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
        var owned: (any Error)? = nil
        withUnsafeMutableBytes(of: &owned) { $0.storeBytes(of: bits & ~1, as: UInt.self) }
        owned = nil
    }
}
