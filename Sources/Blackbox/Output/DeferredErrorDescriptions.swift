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
/// accesses: the caller fills the slot before it commits the record, the writer empties it after it
/// has seen the commit and before it releases the space, and the space is reserved again only after
/// that release. Records recovered from a dead process were never here and keep their type names.
final class DeferredErrorDescriptions: Sendable {
    static let bytesPerSlot = 64
    private let mask: UInt64
    /// The slots' address once the first error came (0 before): published once by a compare-exchange
    /// and freed with the object, so reading it takes no retain (a lazily made class instance cost
    /// every call a retain and a release on one shared count).
    private let slotsAddress = ManagedAtomic<UInt>(0)

    private var slotCount: Int { Int(mask + 1) / Self.bytesPerSlot }

    init(journalCapacity: UInt64) {
        precondition(
            journalCapacity.nonzeroBitCount == 1 && journalCapacity >= UInt64(Self.bytesPerSlot),
            "a journal's capacity is a power of two")
        mask = journalCapacity - 1
    }

    deinit {
        guard let slots = UnsafeMutablePointer<(any Error)?>(bitPattern: slotsAddress.load(ordering: .acquiring))
        else { return }
        slots.deinitialize(count: slotCount)
        slots.deallocate()
    }

    private func slot(for position: UInt64) -> Int { Int((position & mask) / UInt64(Self.bytesPerSlot)) }

    private var slots: UnsafeMutablePointer<(any Error)?>? {
        UnsafeMutablePointer(bitPattern: slotsAddress.load(ordering: .acquiring))
    }

    private func makeSlots() -> UnsafeMutablePointer<(any Error)?> {
        let made = UnsafeMutablePointer<(any Error)?>.allocate(capacity: slotCount)
        made.initialize(repeating: nil, count: slotCount)
        let (won, current) = slotsAddress.compareExchange(
            expected: 0, desired: UInt(bitPattern: made), ordering: .acquiringAndReleasing)
        guard !won, let current = UnsafeMutablePointer<(any Error)?>(bitPattern: current) else { return made }
        made.deinitialize(count: slotCount)
        made.deallocate()
        return current
    }

    /// Before the record at `position` is committed.
    func hold(_ error: any Error, for position: UInt64) {
        let slots = slots ?? makeSlots()
        slots[slot(for: position)] = error
    }

    /// By the writer, for a committed record marked `describesErrorLater`.
    func take(for position: UInt64) -> (any Error)? {
        guard let slots else { return nil }
        let slot = slot(for: position)
        defer { slots[slot] = nil }
        return slots[slot]
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
