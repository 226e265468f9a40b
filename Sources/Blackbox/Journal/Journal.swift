import Atomics

/// The ring protocol over a `JournalFile`: many producers, one consumer (the writer thread).
///
/// Positions are byte offsets into an endless stream; `position % capacity` is the place in the ring.
/// - Producers reserve space with a compare-and-swap on `writePosition`, fill the record, and commit
///   it by storing its commit word last (release). A record is complete exactly when its commit word
///   equals `position | commitBit`.
/// - The consumer reads committed records in position order starting at its cursor, writes them out,
///   publishes a checkpoint, then advances `readPosition` (release), which gives the space back.
/// - Invariant: `writePosition - readPosition <= capacity`, so a reservation never overlaps a record
///   the consumer has not finished with.
final class Journal: @unchecked Sendable {
    let file: JournalFile
    let capacity: UInt64
    private let mask: UInt64
    /// The largest record a producer may reserve; bigger messages are truncated with a marker, so no
    /// single record can starve the others or exceed the ring.
    let maxRecordSize: Int
    // The hot path's pointers, copied out of `file` so that a log call touches no class reference
    // (each would cost a retain and a release).
    private let data: UnsafeMutableRawPointer
    private let writePosition: UnsafeAtomic<UInt64>
    private let readPosition: UnsafeAtomic<UInt64>

    init(file: JournalFile) {
        self.file = file
        self.data = file.data
        self.writePosition = file.writePosition
        self.readPosition = file.readPosition
        self.capacity = UInt64(file.capacity)
        self.mask = UInt64(file.capacity - 1)
        self.maxRecordSize = min(file.capacity / 4, 1 << 20)
    }

    // MARK: Producers

    /// Reserves `size` bytes (rounded up to 8), or returns nil when the ring has no room right now.
    @inline(__always)
    func tryReserve(_ size: Int) -> (record: UnsafeMutableRawPointer, position: UInt64)? {
        let needed = UInt64(RecordLayout.aligned(size))
        var expected = writePosition.load(ordering: .relaxed)
        while true {
            let released = readPosition.load(ordering: .acquiring)
            if expected &+ needed &- released > capacity { return nil }
            // Sequentially consistent: the writer's sleep protocol relies on this store being ordered
            // before the producer's later load of the writer's sleeping flag (see `LogWriter`).
            let (exchanged, original) = writePosition.weakCompareExchange(
                expected: expected, desired: expected &+ needed, successOrdering: .sequentiallyConsistent,
                failureOrdering: .relaxed)
            if exchanged { return (data + Int(expected & mask), expected) }
            expected = original
        }
    }

    /// Seals a filled record: length, checksum, then the commit word.
    @inline(__always)
    func commit(_ record: UnsafeMutableRawPointer, position: UInt64, length: Int) {
        record.storeBytes(of: UInt32(length), toByteOffset: RecordLayout.length, as: UInt32.self)
        let sum = journalChecksum(
            UnsafeRawPointer(record + RecordLayout.timestamp), count: length - RecordLayout.timestamp, seed: position)
        record.storeBytes(of: sum, toByteOffset: RecordLayout.checksum, as: UInt32.self)
        commitWord(record).store(position | RecordLayout.commitBit, ordering: .releasing)
    }

    @inline(__always)
    private func commitWord(_ record: UnsafeMutableRawPointer) -> UnsafeAtomic<UInt64> {
        UnsafeAtomic(at: record.assumingMemoryBound(to: UInt64.AtomicRepresentation.self))
    }

    // MARK: Consumer

    var reservedEnd: UInt64 { writePosition.load(ordering: .sequentiallyConsistent) }
    var releasedPosition: UInt64 { readPosition.load(ordering: .acquiring) }

    /// The record at `position` if its producer has committed it.
    @inline(__always)
    func committedRecord(at position: UInt64) -> RecordView? {
        let record = data + Int(position & mask)
        let word = commitWord(record).load(ordering: .acquiring)
        return word == position | RecordLayout.commitBit ? RecordView(base: UnsafeRawPointer(record)) : nil
    }

    /// Gives the space before `position` back to producers. Publish the checkpoint first.
    func release(upTo position: UInt64) {
        readPosition.store(position, ordering: .releasing)
    }

    // MARK: Checkpoint

    /// Where the writer stood after its last completed batch: every record before `readPosition` is in
    /// the log file identified by device and inode, whose first `fileSize` bytes hold exactly them (and
    /// what came before). Recovery truncates that file back to `fileSize` and replays from
    /// `readPosition`, which makes replay exactly-once even when the process died just after `write(2)`.
    struct Checkpoint: Equatable {
        var readPosition: UInt64 = 0
        var device: UInt64 = 0
        var inode: UInt64 = 0
        var fileSize: UInt64 = 0
        /// When the active log file was started (for time-based rotation across restarts).
        var fileStartNanoseconds: UInt64 = 0
        /// False when the slot's checksum failed (see `load(header:formatVersion:)`).
        var isTrusted = true
    }

    /// Only the writer publishes, and only the writer and start-up read it.
    func loadCheckpoint() -> Checkpoint {
        Checkpoint.load(header: UnsafeRawPointer(file.header), formatVersion: file.formatVersion)
    }

    /// Double-buffered: the new checkpoint goes into the slot not in use, then the generation flips
    /// to it, so a kill between the stores leaves the previous checkpoint intact.
    func publish(_ checkpoint: Checkpoint) {
        let generation = file.checkpointGeneration.load(ordering: .relaxed) &+ 1
        checkpoint.store(into: slotAddress(generation), generation: generation)
        file.checkpointGeneration.store(generation, ordering: .releasing)
    }

    private func slotAddress(_ generation: UInt64) -> UnsafeMutableRawPointer {
        file.header + JournalFile.Offset.checkpointSlot(generation)
    }

    // MARK: Recovery

    struct RecoveryOutcome: Equatable {
        var records = 0
        /// Bytes skipped because they held no valid record: torn by a kill mid-write, or corrupted.
        var skippedBytes: UInt64 = 0
        var skippedRegions = 0
    }

    /// Visits every intact record between the checkpoint and the reservation end, in order, and steps
    /// over torn or corrupted ones (`JournalReader.scan`). Only for start-up, before producers run.
    func recover(visit: (_ record: RecordView, _ next: UInt64) -> Void) -> RecoveryOutcome {
        let end = file.writePosition.load(ordering: .acquiring)
        let start = JournalReader.pendingStart(checkpoint: loadCheckpoint().readPosition, end: end, capacity: capacity)
        guard start < end else { return RecoveryOutcome() }
        // The mirror mapping makes up to one ring's worth contiguous from any place in it.
        return JournalReader.scan(data + Int(start & mask), count: Int(end - start), start: start, visit: visit)
    }

    /// After recovery: nothing is pending any more.
    func markAllConsumed() {
        var checkpoint = loadCheckpoint()
        checkpoint.readPosition = file.writePosition.load(ordering: .acquiring)
        publish(checkpoint)
        release(upTo: checkpoint.readPosition)
    }
}
