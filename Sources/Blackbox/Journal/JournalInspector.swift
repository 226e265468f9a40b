#if canImport(Glibc)
    import Glibc
#endif

/// Reads a journal file from outside the process that owns it (`blackbox logs --journal`): the
/// records not yet written to the log file, e.g. after a `kill -9` and before the app's next start
/// replays them. Reads with `pread` and takes no lock, so it works while the app runs; a record
/// being written at that moment fails its checksum and is left out.
///
/// It reads by the rules recovery uses (`JournalReader`), so the log file cut as `keptSize` says,
/// followed by `lines`, is exactly what the log holds after the next start.
package enum JournalInspector {
    public struct Pending: Sendable, Equatable {
        /// Text lines, oldest first.
        public var lines: [String]
        /// Process id of the journal's last owner.
        public var ownerPID: Int32?
        let checkpoint: Journal.Checkpoint

        /// How many bytes of the file at `path` the next start keeps: the checkpoint's log file is
        /// cut back to the checkpoint, because what follows is replayed from `lines`. Nil when the
        /// file cannot be read.
        public func keptSize(ofFileAt path: String) -> UInt64? {
            var info = stat()
            guard stat(path, &info) == 0 else { return nil }
            return checkpoint.keptSize(
                device: UInt64(info.st_dev), inode: UInt64(info.st_ino), size: UInt64(info.st_size))
        }
    }

    public static func pendingLines(path: String, limit: Int = .max) throws(BlackboxError) -> Pending {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw .journalUnavailable(path: path, SystemError("open", path: path)) }
        defer { close(fd) }
        var header = [UInt8](repeating: 0, count: JournalFile.headerSize)
        guard pread(fd, &header, header.count, 0) == header.count else {
            throw .journalUnavailable(path: path, reason: "shorter than a journal header")
        }
        func word(_ offset: Int) -> UInt64 {
            header.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: offset, as: UInt64.self) }
        }
        guard word(JournalFile.Offset.magic) == JournalFile.magic else {
            throw .journalUnavailable(path: path, reason: "not a Blackbox journal")
        }
        let formatVersion = UInt32(truncatingIfNeeded: word(JournalFile.Offset.version))
        guard formatVersion <= JournalFile.version else {
            throw .journalUnavailable(
                path: path, reason: "written by a newer Blackbox (journal format \(formatVersion)); use its tools")
        }
        guard let capacity = try? JournalFile.validatedCapacity(Int(word(JournalFile.Offset.capacity))) else {
            throw .journalUnavailable(path: path, reason: "not a Blackbox journal")
        }
        let end = word(JournalFile.Offset.writePosition)
        let checkpoint = header.withUnsafeBytes {
            Journal.Checkpoint.load(header: $0.baseAddress!, formatVersion: formatVersion)
        }
        let start = JournalReader.pendingStart(
            checkpoint: checkpoint.readPosition, end: end, capacity: UInt64(capacity))
        let owner = UInt32(truncatingIfNeeded: word(JournalFile.Offset.ownerPID))
        var pending = Pending(lines: [], ownerPID: owner == 0 ? nil : Int32(bitPattern: owner), checkpoint: checkpoint)
        guard start < end else { return pending }

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
        pending.lines = JournalTail.lines(bytes: bytes, startPosition: start, limit: limit)
        return pending
    }
}
