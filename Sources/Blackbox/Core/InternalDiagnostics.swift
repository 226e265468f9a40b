import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// How Blackbox speaks about its own trouble: one clear line on stderr, once per distinct problem,
/// never a trap. (A logger that crashes the app it is meant to diagnose is worse than no logger.)
enum InternalDiagnostics {
    private static let reported = Mutex<Set<String>>([])

    /// Prints `message` once per process for each distinct `key` (the message itself by default).
    static func report(_ message: String, key: String? = nil) {
        let isNew = reported.withLock { $0.insert(key ?? message).inserted }
        if isNew { say(message) }
    }

    /// Prints `message` now. For callers that track their own episodes (a write failure and its end).
    static func say(_ message: String) {
        let line = "blackbox: \(message)\n"
        _ = line.utf8.withContiguousStorageIfAvailable { write(2, $0.baseAddress, $0.count) }
    }
}
