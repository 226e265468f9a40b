#if canImport(Glibc)
    import Glibc
#endif

/// Reads a journal file from outside the process that owns it (`blackbox logs --journal`): the
/// records not yet written to the log file, e.g. after a `kill -9` and before the app's next start
/// replays them. Reads with `pread` and takes no lock, so it works while the app runs; a record
/// being written at that moment fails its checksum and is left out.
public enum JournalInspector {
    public struct Pending: Sendable, Equatable {
        /// Text lines, oldest first.
        public var lines: [String]
        /// Process id of the journal's last owner.
        public var ownerPID: Int32?
    }

    public static func pendingLines(path: String, limit: Int = .max) throws(BlackboxError) -> Pending {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw .journalUnavailable(path: path, reason: errnoDescription()) }
        defer { close(fd) }
        var header = [UInt8](repeating: 0, count: JournalFile.headerSize)
        guard pread(fd, &header, header.count, 0) == header.count else {
            throw .journalUnavailable(path: path, reason: "shorter than a journal header")
        }
        func word(_ offset: Int) -> UInt64 {
            header.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: offset, as: UInt64.self) }
        }
        guard word(JournalFile.Offset.magic) == JournalFile.magic,
            let capacity = try? JournalFile.validatedCapacity(Int(word(JournalFile.Offset.capacity)))
        else { throw .journalUnavailable(path: path, reason: "not a Blackbox journal") }
        let end = word(JournalFile.Offset.writePosition)
        let generation = word(JournalFile.Offset.checkpointGeneration)
        var start = word(
            JournalFile.Offset.checkpointSlots + Int(generation & 1) * JournalFile.Offset.checkpointSlotSize)
        if end &- start > UInt64(capacity) { start = end &- UInt64(capacity) }
        start = UInt64(RecordLayout.aligned(Int(start)))
        let owner = UInt32(truncatingIfNeeded: word(JournalFile.Offset.ownerPID))
        guard start < end else { return Pending(lines: [], ownerPID: owner == 0 ? nil : Int32(bitPattern: owner)) }

        // The ring's bytes from `start` to `end`, unwrapped into one run.
        var bytes = [UInt8](repeating: 0, count: Int(end - start))
        var copied = 0
        while copied < bytes.count {
            let ringOffset = Int((start + UInt64(copied)) % UInt64(capacity))
            let count = min(bytes.count - copied, capacity - ringOffset)
            let n = bytes.withUnsafeMutableBytes {
                pread(fd, $0.baseAddress! + copied, count, off_t(JournalFile.headerSize + ringOffset))
            }
            guard n == count else { throw .journalUnavailable(path: path, reason: "short read") }
            copied += count
        }
        let lines = JournalTail.lines(bytes: bytes, startPosition: start, limit: limit)
        return Pending(lines: lines, ownerPID: owner == 0 ? nil : Int32(bitPattern: owner))
    }
}
