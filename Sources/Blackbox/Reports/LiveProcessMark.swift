import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Tells whether the process that left a file in a directory still runs, without trusting its pid: a
/// pid comes back (a container's app is pid 1 at every start, and a busy machine with `pid_max` 32768
/// wraps it within minutes), so a dead process's unnamed report was skipped as a living one's, for
/// as long as the pid was taken.
///
/// The process holds an exclusive `flock` on `<directory>/.alive-<token>` for its life; the kernel
/// drops the lock when the process ends, however it ends. The token is the pid and a random number.
/// The mark is made under a temporary name, locked, then renamed into place, so that no other
/// process ever sees it unlocked while its owner lives. A forked child closes its copies of the
/// marks' descriptors (a lock belongs to the open file, which the child would share and keep locked
/// after its parent ended) and takes marks of its own.
struct LiveProcessMark: Sendable {
    let token: String
    /// The process that took it: a forked child finds its parent's marks in `taken`.
    let pid: pid_t
    /// Held open for the process's life: closing it drops the lock.
    private let descriptor: Int32

    static let prefix = ".alive-"

    /// The process's marks, by directory: taken once, held (the descriptor open) until the process ends.
    private static let taken = Mutex<[String: LiveProcessMark]>([:])

    /// This process's mark in `directory`, taken on first use; nil when it cannot be made (then the
    /// caller names its files by pid alone, as before marks).
    static func mine(in directory: String) -> LiveProcessMark? {
        taken.withLock { taken in
            if let mark = taken[directory], mark.pid == getpid() { return mark }
            let token = "\(getpid())-\(String(UInt64.random(in: 0...UInt64.max), radix: 16))"
            let path = "\(directory)/\(prefix)\(token)"
            let temporary = path + ".tmp"
            guard (try? makeDirectory(directory)) != nil else { return nil }
            let fd = open(temporary, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
            guard fd >= 0 else { return nil }
            guard flock(fd, LOCK_EX | LOCK_NB) == 0, rename(temporary, path) == 0 else {
                unlink(temporary)
                close(fd)
                return nil
            }
            // The descriptor stays open: closing it would drop the lock.
            MarkDescriptors.shared.add(fd)
            let mark = LiveProcessMark(token: token, pid: getpid(), descriptor: fd)
            taken[directory] = mark
            return mark
        }
    }

    enum Owner: Equatable {
        case thisProcess, living, ended
    }

    /// Whether the process that took the mark `token` in `directory` still runs. A mark that cannot
    /// be opened for another reason than its absence, or locked for another reason than its owner's
    /// lock, counts as living: its files are then left alone, as a living process's are.
    static func owner(of token: String, in directory: String) -> Owner {
        if taken.withLock({ $0[directory].map { $0.token == token && $0.pid == getpid() } == true }) {
            return .thisProcess
        }
        let fd = open("\(directory)/\(prefix)\(token)", O_RDWR | O_CLOEXEC)
        guard fd >= 0 else { return errno == ENOENT ? .ended : .living }
        defer { close(fd) }
        return flock(fd, LOCK_EX | LOCK_NB) == 0 ? .ended : .living
    }

    /// Gives up this process's mark in `directory`, as its end would (tests).
    static func release(in directory: String) {
        guard let mark = taken.withLock({ $0.removeValue(forKey: directory) }), mark.pid == getpid() else { return }
        MarkDescriptors.shared.remove(mark.descriptor)
        close(mark.descriptor)
    }

    /// Removes the marks of processes that ended (what is left once their files were taken care of),
    /// and the temporary ones a process died making. A mark is locked while it is removed, and a
    /// process never takes a name again (its token is new), so no living mark goes.
    static func removeEnded(in directory: String) {
        for name in directoryEntries(directory) where name.hasPrefix(prefix) {
            let path = "\(directory)/\(name)"
            let fd = open(path, O_RDWR | O_CLOEXEC)
            guard fd >= 0 else { continue }
            if flock(fd, LOCK_EX | LOCK_NB) == 0 { unlink(path) }
            close(fd)
        }
    }
}

/// The marks' descriptors, for the `pthread_atfork` child handler, which closes the child's copies:
/// fixed slots swapped atomically, since the handler must not take a lock another thread may have held
/// at fork time. A directory count past the slots keeps its descriptor in the child (as before).
private final class MarkDescriptors: Sendable {
    static let shared = MarkDescriptors()
    private let slots: InlineArray<16, Atomic<Int32>> = InlineArray { _ in Atomic(-1) }
    private let installed = Atomic<Bool>(false)

    func add(_ fd: Int32) {
        if installed.compareExchange(expected: false, desired: true, ordering: .relaxed).exchanged {
            pthread_atfork(nil, nil) { MarkDescriptors.shared.closeAll() }
        }
        for index in slots.indices
        where slots[index].compareExchange(expected: -1, desired: fd, ordering: .relaxed).exchanged {
            return
        }
    }

    func remove(_ fd: Int32) {
        for index in slots.indices
        where slots[index].compareExchange(expected: fd, desired: -1, ordering: .relaxed).exchanged {
            return
        }
    }

    /// In a forked child: close(2) and atomics only.
    func closeAll() {
        for index in slots.indices {
            let fd = slots[index].exchange(-1, ordering: .relaxed)
            if fd >= 0 { close(fd) }
        }
    }
}
