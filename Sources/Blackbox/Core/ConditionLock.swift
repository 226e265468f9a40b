#if canImport(Glibc)
    import Glibc
#endif

/// A pthread mutex with a condition variable. `Synchronization.Mutex` has no condition variable, and
/// the writer and maintenance threads must sleep with a deadline and be woken without polling.
/// Waits use CLOCK_MONOTONIC, so a wall-clock jump does not stretch or cut them.
final class ConditionLock: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)

    init() {
        pthread_mutex_init(mutex, nil)
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        pthread_cond_init(condition, &attributes)
        pthread_condattr_destroy(&attributes)
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        condition.deallocate()
        mutex.deallocate()
    }

    func withLock<T>(_ body: () throws -> T) rethrows -> T {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body()
    }

    /// Call with the lock held (inside `withLock`). Returns false when the deadline passed.
    @discardableResult
    func wait(untilMonotonic deadline: UInt64) -> Bool {
        var spec = timespec(tv_sec: Int(deadline / 1_000_000_000), tv_nsec: Int(deadline % 1_000_000_000))
        return pthread_cond_timedwait(condition, mutex, &spec) == 0
    }

    func broadcast() { pthread_cond_broadcast(condition) }
}

func monotonicNanoseconds() -> UInt64 {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return UInt64(now.tv_sec) &* 1_000_000_000 &+ UInt64(now.tv_nsec)
}

/// Starts a detached pthread with a name and an alternate signal stack (so a stack overflow on it can
/// still be reported once crash capture is installed).
func startThread(name: String, _ body: @escaping @Sendable () -> Void) {
    final class Box: @unchecked Sendable {
        let body: @Sendable () -> Void
        let name: String
        init(_ body: @escaping @Sendable () -> Void, name: String) {
            self.body = body
            self.name = name
        }
    }
    let box = Unmanaged.passRetained(Box(body, name: name)).toOpaque()
    var thread = pthread_t()
    let rc = pthread_create(
        &thread, nil,
        { raw in
            let box = Unmanaged<Box>.fromOpaque(raw!).takeRetainedValue()
            setCurrentThreadName(box.name)
            let stack = installAlternateSignalStack()
            box.body()
            releaseAlternateSignalStack(stack)
            return nil
        }, box)
    if rc == 0 {
        pthread_detach(thread)
    } else {
        Unmanaged<AnyObject>.fromOpaque(box).release()
        InternalDiagnostics.report("cannot start thread \(name): \(errnoDescription(rc))")
    }
}

/// Gives the calling thread a 64 KiB alternate signal stack (sigaltstack is per thread).
func installAlternateSignalStack() -> UnsafeMutableRawPointer? {
    let size = 64 << 10
    let memory = UnsafeMutableRawPointer.allocate(byteCount: size, alignment: 16)
    var stack = stack_t(ss_sp: memory, ss_flags: 0, ss_size: size)
    guard sigaltstack(&stack, nil) == 0 else {
        memory.deallocate()
        return nil
    }
    return memory
}

func releaseAlternateSignalStack(_ memory: UnsafeMutableRawPointer?) {
    guard let memory else { return }
    var disable = stack_t(ss_sp: nil, ss_flags: Int32(SS_DISABLE), ss_size: 0)
    sigaltstack(&disable, nil)
    memory.deallocate()
}

/// Names the calling thread (as `pthread_setname_np` would; that call is not visible to Swift here).
func setCurrentThreadName(_ name: String) {
    let fd = open("/proc/thread-self/comm", O_WRONLY | O_CLOEXEC)
    guard fd >= 0 else { return }
    let bytes = Array(name.utf8.prefix(15))
    _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    close(fd)
}

/// The kernel's id for the calling thread, read from /proc (`gettid` is not visible to Swift here).
func kernelThreadID() -> UInt32 {
    var buffer = [CChar](repeating: 0, count: 64)
    let n = readlink("/proc/thread-self", &buffer, buffer.count - 1)
    guard n > 0 else { return UInt32(truncatingIfNeeded: getpid()) }
    let path = String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    return path.split(separator: "/").last.flatMap { UInt32($0) } ?? UInt32(truncatingIfNeeded: getpid())
}
