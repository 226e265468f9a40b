#if canImport(Glibc)
    import Glibc
#endif

/// The background thread that compresses fresh archives, calls the on-archive hook and enforces
/// aging, so none of that slows the writer. Aging runs at start, after each rotation and every
/// `RetentionPolicy.checkInterval`.
///
/// Deletion is rename-then-unlink (`<archive>.deleting`), and leftovers of either step from a
/// crashed process are finished at start: a half-written `.gz.tmp` is removed, an uncompressed archive
/// is compressed, a `.deleting` file is deleted.
final class ArchiveMaintainer: @unchecked Sendable {
    private let directory: String
    private let baseName: String
    private let policy: RetentionPolicy
    private let clock: @Sendable () -> UInt64
    private let onArchive: (@Sendable (String) -> Void)?
    private let activeFileSize: @Sendable () -> UInt64

    private let lock = ConditionLock()
    private var pending: [String] = []  // guarded by lock
    private var agingRequested = true  // guarded by lock
    private var stopping = false  // guarded by lock
    private var busy = false  // guarded by lock
    private var running = false

    init(
        directory: String, baseName: String, policy: RetentionPolicy, clock: @escaping @Sendable () -> UInt64,
        onArchive: (@Sendable (String) -> Void)?, activeFileSize: @escaping @Sendable () -> UInt64
    ) {
        self.directory = directory
        self.baseName = baseName
        self.policy = policy
        self.clock = clock
        self.onArchive = onArchive
        self.activeFileSize = activeFileSize
    }

    /// Looks for leftovers synchronously (before the writer can rotate anything, so no archive is
    /// queued twice), then starts the thread.
    func start() {
        running = true
        finishInterruptedWork()
        startThread(name: "blackbox-archive") { [self] in run() }
    }

    /// A file just rotated out of the active name.
    func archived(_ path: String) {
        lock.withLock {
            pending.append(path)
            lock.broadcast()
        }
    }

    func requestAging() {
        lock.withLock {
            agingRequested = true
            lock.broadcast()
        }
    }

    /// Waits until queued work is done (tests and shutdown), at most `timeout` nanoseconds.
    @discardableResult
    func waitUntilIdle(timeout: UInt64 = 10_000_000_000) -> Bool {
        let deadline = monotonicNanoseconds() + timeout
        return lock.withLock {
            while running && (busy || !pending.isEmpty || agingRequested) {
                if !lock.wait(untilMonotonic: deadline) && monotonicNanoseconds() >= deadline { return false }
            }
            return true
        }
    }

    func stop() {
        waitUntilIdle()
        lock.withLock {
            stopping = true
            lock.broadcast()
        }
    }

    private func run() {
        var nextAging = monotonicNanoseconds()
        while true {
            let (jobs, age, stop): ([String], Bool, Bool) = lock.withLock {
                while pending.isEmpty && !agingRequested && !stopping && monotonicNanoseconds() < nextAging {
                    lock.wait(untilMonotonic: nextAging)
                }
                let jobs = pending
                pending.removeAll()
                let age = agingRequested || monotonicNanoseconds() >= nextAging || !jobs.isEmpty
                agingRequested = false
                busy = true
                return (jobs, age, stopping)
            }
            for path in jobs { finish(archive: path) }
            if age {
                enforceRetention()
                nextAging = monotonicNanoseconds() + policy.checkInterval.nanoseconds
            }
            lock.withLock {
                busy = false
                lock.broadcast()
            }
            if stop { break }
        }
        lock.withLock {
            running = false
            lock.broadcast()
        }
    }

    private func finish(archive path: String) {
        guard access(path, F_OK) == 0 else { return }  // already handled
        var final = path
        if policy.compressArchives && !path.hasSuffix(".gz") {
            do {
                try Gzip.compress(path, to: path + ".gz", level: Int32(min(9, max(1, policy.compressionLevel))))
                unlink(path)
                final = path + ".gz"
            } catch {
                InternalDiagnostics.report("\(error); the archive is kept uncompressed", key: "gzip")
            }
        }
        onArchive?(final)
    }

    /// The archives of this base name, with their sizes.
    func listArchives() -> [RetentionPlan.Archive] {
        directoryEntries(directory).compactMap { name in
            guard let parsed = ArchiveName(fileName: name, baseName: baseName) else { return nil }
            var st = stat()
            guard stat("\(directory)/\(name)", &st) == 0 else { return nil }
            return RetentionPlan.Archive(name: parsed, size: UInt64(st.st_size))
        }
    }

    func enforceRetention() {
        let doomed = RetentionPlan.archivesToDelete(
            listArchives(), activeFileSize: activeFileSize(), policy: policy, now: clock())
        for archive in doomed {
            let path = "\(directory)/\(archive.name.fileName)"
            let deleting = path + ".deleting"
            if rename(path, deleting) == 0 { unlink(deleting) }
        }
    }

    private func finishInterruptedWork() {
        for name in directoryEntries(directory) {
            let path = "\(directory)/\(name)"
            if name.hasSuffix(".deleting"), ArchiveName(fileName: String(name.dropLast(9)), baseName: baseName) != nil {
                unlink(path)
            } else if name.hasSuffix(".gz.tmp"),
                ArchiveName(fileName: String(name.dropLast(4)), baseName: baseName) != nil
            {
                unlink(path)
            } else if policy.compressArchives, let parsed = ArchiveName(fileName: name, baseName: baseName),
                !parsed.compressed
            {
                lock.withLock { pending.append(path) }
            }
        }
    }
}
