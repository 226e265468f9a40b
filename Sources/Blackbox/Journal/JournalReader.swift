/// The one set of rules for reading a journal, shared by every reader: start-up recovery
/// (`Journal.recover`), the log tail a crash report carries (`JournalTail`) and `blackbox logs
/// --journal` (`JournalInspector`). Written once so that what a reader shows is exactly what the next
/// start replays.
enum JournalReader {
    /// The record at `base` if it is intact: its commit word names `position`, its parts fit its
    /// length, the length fits the `available` bytes, and the checksum agrees. Torn records (a kill
    /// mid-write) and corrupted ones fail one of these.
    static func intactRecord(at base: UnsafeRawPointer, position: UInt64, available: Int) -> RecordView? {
        guard available >= RecordLayout.headerSize,
            base.loadUnaligned(as: UInt64.self) == position | RecordLayout.commitBit
        else { return nil }
        let record = RecordView(base: base)
        let length = record.length
        guard length >= RecordLayout.headerSize, length <= available, record.isWellFormed else { return nil }
        let sum = journalChecksum(
            base + RecordLayout.timestamp, count: length - RecordLayout.timestamp, seed: position)
        guard sum == base.loadUnaligned(fromByteOffset: RecordLayout.checksum, as: UInt32.self) else { return nil }
        return record
    }

    /// Visits every intact record in `count` bytes that start at stream position `start` (8-aligned),
    /// in order, stepping over anything else 8 bytes at a time (records sit at 8-aligned positions).
    static func scan(
        _ base: UnsafeRawPointer, count: Int, start: UInt64, visit: (_ record: RecordView, _ next: UInt64) -> Void
    ) -> Journal.RecoveryOutcome {
        assert(start % 8 == 0, "records sit at 8-aligned positions")
        var outcome = Journal.RecoveryOutcome()
        var offset = 0
        var skipStart: Int? = nil
        while offset < count {
            let position = start &+ UInt64(offset)
            if let record = intactRecord(at: base + offset, position: position, available: count - offset) {
                if let skipped = skipStart {
                    outcome.skippedBytes += UInt64(offset - skipped)
                    outcome.skippedRegions += 1
                    skipStart = nil
                }
                let length = RecordLayout.aligned(record.length)
                visit(record, position &+ UInt64(length))
                outcome.records += 1
                offset += length
            } else {
                if skipStart == nil { skipStart = offset }
                offset += 8
            }
        }
        if let skipped = skipStart {
            outcome.skippedBytes += UInt64(count - skipped)
            outcome.skippedRegions += 1
        }
        return outcome
    }

    /// Where the records still to be written start: the checkpoint's position, but never more than
    /// one ring before `end` (a corrupted header could claim more), 8-aligned.
    static func pendingStart(checkpoint: UInt64, end: UInt64, capacity: UInt64) -> UInt64 {
        let start = end &- checkpoint > capacity ? end &- capacity : checkpoint
        return UInt64(RecordLayout.aligned(Int(start)))
    }
}

extension Journal.Checkpoint {
    /// Bytes of a slot the checksum covers: the five fields. The checksum follows them (format 2).
    static let fieldBytes = 40

    /// The checkpoint in a journal header (mapped, or read with `pread`). In a format-2 journal a slot
    /// whose checksum fails is not trusted (a corrupted file could otherwise name the log file with a
    /// size of 0 and have it cut): recovery then keeps every log file whole and replays from the last
    /// position the writer released, so lines may repeat but none is lost.
    static func load(header: UnsafeRawPointer, formatVersion: UInt32) -> Self {
        let generation = header.loadUnaligned(fromByteOffset: JournalFile.Offset.checkpointGeneration, as: UInt64.self)
        let slot = header + JournalFile.Offset.checkpointSlot(generation)
        let stored = slot.loadUnaligned(fromByteOffset: fieldBytes, as: UInt32.self)
        guard formatVersion < 2 || stored == checksum(slot: slot, generation: generation) else {
            var untrusted = Self(
                readPosition: header.loadUnaligned(fromByteOffset: JournalFile.Offset.readPosition, as: UInt64.self))
            untrusted.isTrusted = false
            return untrusted
        }
        return Self(
            readPosition: slot.loadUnaligned(fromByteOffset: 0, as: UInt64.self),
            device: slot.loadUnaligned(fromByteOffset: 8, as: UInt64.self),
            inode: slot.loadUnaligned(fromByteOffset: 16, as: UInt64.self),
            fileSize: slot.loadUnaligned(fromByteOffset: 24, as: UInt64.self),
            fileStartNanoseconds: slot.loadUnaligned(fromByteOffset: 32, as: UInt64.self))
    }

    /// Writes the fields and their checksum into `slot`, the one `generation` uses.
    func store(into slot: UnsafeMutableRawPointer, generation: UInt64) {
        slot.storeBytes(of: readPosition, toByteOffset: 0, as: UInt64.self)
        slot.storeBytes(of: device, toByteOffset: 8, as: UInt64.self)
        slot.storeBytes(of: inode, toByteOffset: 16, as: UInt64.self)
        slot.storeBytes(of: fileSize, toByteOffset: 24, as: UInt64.self)
        slot.storeBytes(of: fileStartNanoseconds, toByteOffset: 32, as: UInt64.self)
        slot.storeBytes(
            of: Self.checksum(slot: UnsafeRawPointer(slot), generation: generation), toByteOffset: Self.fieldBytes,
            as: UInt32.self)
    }

    static func checksum(slot: UnsafeRawPointer, generation: UInt64) -> UInt32 {
        journalChecksum(slot, count: fieldBytes, seed: generation)
    }

    /// How much of a log file survives recovery, the rule for torn tails: the checkpoint's own file
    /// keeps its first `fileSize` bytes, because everything after them (whole lines of a batch written
    /// just before a kill, or a line torn by it) belongs to records the journal still holds and
    /// replays. Any other file is kept whole.
    func keptSize(device: UInt64, inode: UInt64, size: UInt64) -> UInt64 {
        guard device == self.device, inode == self.inode else { return size }
        return min(size, fileSize)
    }
}
