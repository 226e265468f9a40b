#if canImport(Glibc)
    import Glibc
#endif

/// Nanoseconds on CLOCK_MONOTONIC: for deadlines and intervals (a wall-clock jump does not move it).
func monotonicNanoseconds() -> UInt64 {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return UInt64(now.tv_sec) &* 1_000_000_000 &+ UInt64(now.tv_nsec)
}

/// CLOCK_MONOTONIC_COARSE: the last tick's time (a few milliseconds' resolution) for a fraction of the
/// cost, for intervals of seconds (rate limits) read on a logging caller's thread.
func coarseMonotonicNanoseconds() -> UInt64 {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC_COARSE, &now)
    return UInt64(now.tv_sec) &* 1_000_000_000 &+ UInt64(now.tv_nsec)
}

/// Nanoseconds since the Unix epoch on CLOCK_REALTIME: for timestamps.
@Sendable
func wallClockNanoseconds() -> UInt64 {
    var now = timespec()
    clock_gettime(CLOCK_REALTIME, &now)
    return UInt64(now.tv_sec) &* 1_000_000_000 &+ UInt64(now.tv_nsec)
}

extension Duration {
    var nanoseconds: UInt64 {
        let (seconds, attoseconds) = components
        return UInt64(max(0, seconds)) &* 1_000_000_000 &+ UInt64(max(0, attoseconds / 1_000_000_000))
    }
}
