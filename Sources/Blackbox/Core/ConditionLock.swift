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
