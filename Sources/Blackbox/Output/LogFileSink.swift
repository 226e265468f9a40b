import BlackboxSystem

#if canImport(Glibc)
    import Glibc
#endif

/// The active log file `<logs>/<base>.log`. Used by the writer thread only.
///
/// Writes are whole batches of whole lines. If a write fails part-way (ENOSPC, EFBIG, EIO), the file
/// is cut back to where the batch started, so a reader never sees half a line.
final class LogFileSink {
    let directory: String
    let baseName: String
    private(set) var descriptor: Int32 = -1
    private(set) var size: UInt64 = 0
    private(set) var device: UInt64 = 0
    private(set) var inode: UInt64 = 0
    /// When the current file was started (nanoseconds since the epoch).
    private(set) var startNanoseconds: UInt64 = 0

    var activePath: String { "\(directory)/\(ArchiveName.activeFileName(baseName: baseName))" }

    /// Opens the active file. When `checkpoint` names this very file, it is cut back to the
    /// checkpoint's size: bytes after it belong to records the journal still holds and will replay.
    init(directory: String, baseName: String, checkpoint: Journal.Checkpoint?, now: UInt64) throws(BlackboxError) {
        self.directory = directory
        self.baseName = baseName
        try open(now: now)
        guard let checkpoint, checkpoint.device == device, checkpoint.inode == inode else { return }
        let kept = checkpoint.keptSize(device: device, inode: inode, size: size)
        if kept < size, ftruncate(descriptor, off_t(kept)) == 0 { size = kept }
        if checkpoint.fileStartNanoseconds > 0 { startNanoseconds = checkpoint.fileStartNanoseconds }
    }

    deinit { if descriptor >= 0 { close(descriptor) } }

    var checkpointIdentity: (device: UInt64, inode: UInt64, size: UInt64, start: UInt64) {
        (device, inode, size, startNanoseconds)
    }

    private func open(now: UInt64) throws(BlackboxError) {
        let fd = Glibc.open(activePath, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { throw .directoryUnavailable(path: activePath, SystemError("open", path: activePath)) }
        var st = stat()
        fstat(fd, &st)
        descriptor = fd
        size = UInt64(st.st_size)
        device = UInt64(st.st_dev)
        inode = UInt64(st.st_ino)
        startNanoseconds = now
    }

    /// Appends `bytes`; on failure returns errno, with the file cut back to its size before the call.
    func write(_ bytes: UnsafeRawBufferPointer) -> Int32? {
        guard !bytes.isEmpty else { return nil }
        if writeFully(descriptor, bytes.baseAddress, bytes.count) {
            size += UInt64(bytes.count)
            return nil
        }
        let code = errno
        _ = ftruncate(descriptor, off_t(size))
        return code
    }

    /// Renames the active file to an archive and opens a new, empty active file. Returns the
    /// archive's path, or nil when there was nothing to archive or the rename failed (then logging
    /// simply continues in the same file).
    func rotate(now: UInt64) -> String? {
        guard size > 0 else { return nil }
        var name = ArchiveName(
            baseName: baseName, startNanoseconds: startNanoseconds, endNanoseconds: max(now, startNanoseconds),
            compressed: false)
        while access("\(directory)/\(name.fileName)", F_OK) == 0
            || access("\(directory)/\(name.fileName).gz", F_OK) == 0
        {
            name.sequence += 1
        }
        let archive = "\(directory)/\(name.fileName)"
        guard rename(activePath, archive) == 0 else {
            InternalDiagnostics.report("cannot rotate \(activePath): \(errnoDescription())", key: "rotate")
            return nil
        }
        close(descriptor)
        descriptor = -1
        do {
            try open(now: now)
        } catch {
            InternalDiagnostics.report("\(error)", key: "reopen")
            // Keep writing somewhere rather than nowhere: reopen the archive itself.
            descriptor = Glibc.open(archive, O_WRONLY | O_APPEND | O_CLOEXEC)
            return nil
        }
        return archive
    }
}
