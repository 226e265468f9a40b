import Atomics
import BlackboxSystem

#if canImport(Glibc)
    import Glibc
#endif

/// The journal file on disk and its mapping into memory.
///
/// Layout (all integers little-endian, the machine's own order):
/// ```
/// page 0            header (see `Offset`)
/// page 1 ...        data area, `capacity` bytes, a ring of records
/// ```
/// The data area is mapped twice, back to back, so that a record that runs past the end of the ring
/// is still contiguous in memory (the "mirrored" or "magic" ring buffer). Producers and the writer
/// therefore never split a record.
///
/// The mapping is `MAP_SHARED`: a store into it is in the kernel's page cache the moment it is made, so
/// it survives the process being killed. The file is preallocated (`posix_fallocate`), because a store
/// into a sparse page of a shared mapping on a full disk raises SIGBUS.
///
/// Invariant: a `JournalFile` is never unmapped while the process runs (see `LoggingCore`), because a
/// thread may still be inside a log call when the journal is retired.
final class JournalFile: @unchecked Sendable {
    enum Offset {
        static let magic = 0
        static let version = 8
        static let capacity = 16
        static let ownerPID = 24
        /// The writer thread's id while it drains the ring (0 otherwise): the crash handler waits for
        /// it to write the lines logged before a crash, unless it is the thread that crashed.
        static let writerThread = 32
        // Each on its own cache line: producers CAS `writePosition` on every call, the writer stores
        // `readPosition` once per batch; sharing a line would bounce it between cores on every call.
        static let writePosition = 64
        static let readPosition = 128
        static let checkpointGeneration = 192
        static let checkpointSlots = 256
        static let checkpointSlotSize = 64
        /// The slot that `generation` uses (the checkpoint is double-buffered).
        static func checkpointSlot(_ generation: UInt64) -> Int {
            checkpointSlots + Int(generation & 1) * checkpointSlotSize
        }
    }

    static let magic: UInt64 = 0x3130_4C4E_524A_4242  // "BBJRNL01"
    /// 2: checkpoint slots carry a checksum. A version-1 journal is still recovered (its checkpoint
    /// trusted as it is), then replaced by a version-2 one.
    static let version: UInt32 = 2
    static let headerSize = 4096

    let path: String
    let descriptor: Int32
    let capacity: Int
    let header: UnsafeMutableRawPointer
    /// Start of the data area; valid for `2 * capacity` bytes thanks to the mirror mapping.
    let data: UnsafeMutableRawPointer
    /// True when the file existed with a valid header: it may hold records of a previous process.
    let reopened: Bool
    /// The format version of the file as found (older ones are recovered, then replaced).
    let formatVersion: UInt32

    var writePosition: UnsafeAtomic<UInt64> { atomic(at: Offset.writePosition) }
    var readPosition: UnsafeAtomic<UInt64> { atomic(at: Offset.readPosition) }
    var checkpointGeneration: UnsafeAtomic<UInt64> { atomic(at: Offset.checkpointGeneration) }
    var writerThread: UnsafeAtomic<UInt64> { atomic(at: Offset.writerThread) }

    private func atomic(at offset: Int) -> UnsafeAtomic<UInt64> {
        UnsafeAtomic(at: (header + offset).assumingMemoryBound(to: UInt64.AtomicRepresentation.self))
    }

    /// Opens (or creates) the journal at `path`, takes its exclusive lock and maps it.
    ///
    /// An existing journal keeps its own capacity so that its records can be recovered; call
    /// `reformat` afterwards to change it.
    static func open(path: String, capacity requested: Int) throws(BlackboxError) -> JournalFile {
        let capacity = try validatedCapacity(requested)
        let fd = Glibc.open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { throw .journalUnavailable(path: path, SystemError("open", path: path)) }
        if flock(fd, LOCK_EX | LOCK_NB) != 0 {
            let owner = readOwnerPID(fd)
            Glibc.close(fd)
            throw .journalLocked(path: path, ownerPID: owner)
        }
        do {
            var existing = readValidHeader(fd)
            if let found = existing, found.version > version {
                existing = nil
                if keepAside(path: path, version: found.version) {
                    Glibc.close(fd)
                    return try open(path: path, capacity: requested)
                }
            }
            let effectiveCapacity = existing?.capacity ?? capacity
            if existing == nil {
                try initialize(fd: fd, path: path, capacity: effectiveCapacity)
            }
            let file = try map(
                fd: fd, path: path, capacity: effectiveCapacity, reopened: existing != nil,
                formatVersion: existing?.version ?? version)
            file.header.storeBytes(
                of: UInt32(truncatingIfNeeded: getpid()), toByteOffset: Offset.ownerPID, as: UInt32.self)
            // An earlier process's writer, if it died running.
            file.writerThread.store(0, ordering: .relaxed)
            return file
        } catch {
            Glibc.close(fd)
            throw error
        }
    }

    private init(
        path: String, descriptor: Int32, capacity: Int, base: UnsafeMutableRawPointer, reopened: Bool,
        formatVersion: UInt32
    ) {
        self.formatVersion = formatVersion
        self.path = path
        self.descriptor = descriptor
        self.capacity = capacity
        self.header = base
        self.data = base + Self.headerSize
        self.reopened = reopened
    }

    /// Releases the lock and the descriptor. The mapping stays (see the type's invariant).
    func close() {
        flock(descriptor, LOCK_UN)
        Glibc.close(descriptor)
    }

    static func validatedCapacity(_ requested: Int) throws(BlackboxError) -> Int {
        let page = Int(sysconf(Int32(_SC_PAGESIZE)))
        guard requested >= 16 * page, requested <= 1 << 30, requested.nonzeroBitCount == 1 else {
            throw .invalidConfiguration(
                "journal size must be a power of two between \(16 * page) bytes and 1 GiB, got \(requested)")
        }
        return requested
    }

    private static func readOwnerPID(_ fd: Int32) -> Int32? {
        var pid: UInt32 = 0
        let n = pread(fd, &pid, 4, off_t(Offset.ownerPID))
        return n == 4 && pid != 0 ? Int32(bitPattern: pid) : nil
    }

    /// The capacity and version recorded in a valid header, or nil when the file is new, short or not
    /// a journal. A newer version is returned as found (its layout is unknown: only the version counts).
    private static func readValidHeader(_ fd: Int32) -> (capacity: Int, version: UInt32)? {
        var st = stat()
        guard fstat(fd, &st) == 0 else { return nil }
        var words = (UInt64(0), UInt64(0), UInt64(0))
        guard pread(fd, &words, 24, 0) == 24, words.0 == magic else { return nil }
        let found = UInt32(truncatingIfNeeded: words.1)
        guard found >= 1 else { return nil }
        if found > version { return (0, found) }
        let capacity = Int(words.2)
        guard (try? validatedCapacity(capacity)) != nil, Int(st.st_size) == headerSize + capacity else { return nil }
        return (capacity, found)
    }

    /// A journal written by a newer Blackbox (the app was downgraded) may hold records this version
    /// cannot read: it is kept under another name for the newer version's tools, not overwritten.
    /// True when it was renamed (then a new journal is created at `path`).
    private static func keepAside(path: String, version found: UInt32) -> Bool {
        let aside = "\(path).v\(found)-\(time(nil))"
        guard rename(path, aside) == 0 else {
            InternalDiagnostics.report(
                "the journal \(path) was written by a newer Blackbox (format \(found)) and cannot be kept aside (\(errnoDescription())); its records are lost"
            )
            return false
        }
        InternalDiagnostics.report(
            "the journal \(path) was written by a newer Blackbox (format \(found)); kept as \(aside), starting a new one"
        )
        return true
    }

    /// Writes a fresh, zeroed journal. Zeroes matter: a zero commit word never looks committed.
    private static func initialize(fd: Int32, path: String, capacity: Int) throws(BlackboxError) {
        guard ftruncate(fd, 0) == 0 else { throw .journalUnavailable(path: path, SystemError("ftruncate", path: path)) }
        let size = off_t(headerSize + capacity)
        let rc = posix_fallocate(fd, 0, size)
        guard rc == 0 else {
            throw .journalUnavailable(
                path: path, SystemError("posix_fallocate", path: path, errno: rc),
                context: "cannot preallocate \(size) bytes")
        }
        var head = [UInt8](repeating: 0, count: headerSize)
        head.withUnsafeMutableBytes { raw in
            raw.storeBytes(of: magic, toByteOffset: Offset.magic, as: UInt64.self)
            raw.storeBytes(of: version, toByteOffset: Offset.version, as: UInt32.self)
            raw.storeBytes(of: UInt64(capacity), toByteOffset: Offset.capacity, as: UInt64.self)
            // A valid empty checkpoint (generation 0, nothing released, no log file): a run that dies
            // before its writer's first checkpoint leaves a journal the next start trusts. Without it the
            // zeroed slot fails its checksum and every such start warned of a damaged checkpoint.
            guard let base = raw.baseAddress else { return }
            let slot = Offset.checkpointSlot(0)
            raw.storeBytes(
                of: Journal.Checkpoint.checksum(slot: UnsafeRawPointer(base + slot), generation: 0),
                toByteOffset: slot + Journal.Checkpoint.fieldBytes, as: UInt32.self)
        }
        guard pwrite(fd, head, headerSize, 0) == headerSize else {
            throw .journalUnavailable(path: path, SystemError("pwrite", path: path))
        }
    }

    private static func map(fd: Int32, path: String, capacity: Int, reopened: Bool, formatVersion: UInt32)
        throws(BlackboxError) -> JournalFile
    {
        let total = headerSize + 2 * capacity
        guard let reserved = mmap(nil, total, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0), reserved != MAP_FAILED
        else {
            throw .journalUnavailable(path: path, SystemError("mmap"), context: "cannot reserve address space")
        }
        // MAP_POPULATE: fault every page in now, at start-up, rather than in log calls during the first
        // lap of the ring (a fault costs ~15 µs on the VMs this was measured on).
        let first = mmap(
            reserved, headerSize + capacity, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED | MAP_POPULATE, fd, 0)
        let mirror = mmap(
            reserved + headerSize + capacity, capacity, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd,
            off_t(headerSize))
        guard first != MAP_FAILED, mirror != MAP_FAILED else {
            let failure = SystemError("mmap", path: path)
            munmap(reserved, total)
            throw .journalUnavailable(path: path, failure, context: "cannot map")
        }
        return JournalFile(
            path: path, descriptor: fd, capacity: capacity, base: reserved, reopened: reopened,
            formatVersion: formatVersion)
    }
}
