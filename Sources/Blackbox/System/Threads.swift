import BlackboxSystem
import CCrashHandler

#if canImport(Glibc)
    import Glibc
#endif

/// Starts a detached pthread with a name and an alternate signal stack (so a stack overflow on it can
/// still be reported once crash capture is installed).
/// Returns once the thread has named itself and has its alternate stack: a crash right after
/// `Blackbox.start` (a server dying in its first millisecond) must find Blackbox's threads named in
/// the report, not still carrying the app's name.
func startThread(name: String, _ body: @escaping @Sendable () -> Void) {
    final class Box: @unchecked Sendable {
        let body: @Sendable () -> Void
        let name: String
        let ready: UnsafeMutablePointer<sem_t>
        init(_ body: @escaping @Sendable () -> Void, name: String, ready: UnsafeMutablePointer<sem_t>) {
            self.body = body
            self.name = name
            self.ready = ready
        }
    }
    let ready = UnsafeMutablePointer<sem_t>.allocate(capacity: 1)
    sem_init(ready, 0, 0)
    defer {
        sem_destroy(ready)
        ready.deallocate()
    }
    let box = Unmanaged.passRetained(Box(body, name: name, ready: ready)).toOpaque()
    var thread = pthread_t()
    let rc = pthread_create(
        &thread, nil,
        { raw in
            let box = Unmanaged<Box>.fromOpaque(raw!).takeRetainedValue()
            setCurrentThreadName(box.name)
            // The crash handler's own: mmap'd with a guard page, freed when the thread exits.
            _ = bbx_crash_ensure_alternate_stack(64 << 10)
            sem_post(box.ready)  // the last use of `ready` here: the starter frees it once woken
            box.body()
            return nil
        }, box)
    if rc == 0 {
        pthread_detach(thread)
        _ = retryingEINTR { sem_wait(ready) }
    } else {
        Unmanaged<AnyObject>.fromOpaque(box).release()
        InternalDiagnostics.report("cannot start thread \(name): \(errnoDescription(rc))")
    }
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

/// The kernel thread id of the calling thread, cached per thread (gettid is a syscall).
@usableFromInline
func currentThreadID() -> UInt32 {
    if let cached = pthread_getspecific(threadIDKey) { return UInt32(truncatingIfNeeded: UInt(bitPattern: cached)) }
    let tid = kernelThreadID()
    pthread_setspecific(threadIDKey, UnsafeRawPointer(bitPattern: UInt(tid)))
    return tid
}

private let threadIDKey: pthread_key_t = {
    var key = pthread_key_t()
    pthread_key_create(&key, nil)
    return key
}()

/// User and system CPU time of the calling thread (`RUSAGE_THREAD`, which Glibc's module does not
/// export), or 0 when it cannot be read.
func currentThreadCPUNanoseconds() -> UInt64 {
    let rusageThread: __rusage_who_t = 1
    var usage = rusage()
    guard getrusage(rusageThread, &usage) == 0 else { return 0 }
    let user = UInt64(usage.ru_utime.tv_sec) &* 1_000_000_000 &+ UInt64(usage.ru_utime.tv_usec) &* 1000
    let system = UInt64(usage.ru_stime.tv_sec) &* 1_000_000_000 &+ UInt64(usage.ru_stime.tv_usec) &* 1000
    return user &+ system
}
