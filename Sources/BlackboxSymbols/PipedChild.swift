import BlackboxSystem
#if canImport(Glibc)
    import Glibc
#endif

/// A helper program (llvm-symbolizer) started with `posix_spawn`, its stdin and stdout on pipes and its
/// stderr on /dev/null. Hand-written because Foundation's `Process` would pull all of Foundation into
/// the logging library, and because writes to it must not raise SIGPIPE (`withSIGPIPEBlocked`).
public struct PipedChild: Sendable {
    public let pid: pid_t
    /// Write end of the child's stdin.
    public let input: Int32
    /// Read end of the child's stdout.
    public let output: Int32

    /// Nil when the pipes or the process cannot be made.
    public static func spawn(_ executable: String, _ arguments: [String]) -> PipedChild? {
        var toChild: [Int32] = [-1, -1]
        var fromChild: [Int32] = [-1, -1]
        guard makePipe(&toChild) else { return nil }
        guard makePipe(&fromChild) else {
            close(toChild[0])
            close(toChild[1])
            return nil
        }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, toChild[0], 0)
        posix_spawn_file_actions_adddup2(&actions, fromChild[1], 1)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        // The helper gets 0-2 and nothing else of the app's: an inherited listening socket kept a
        // crash-looping server's port bound while its start-up symbolizer ran, and the next start
        // failed with EADDRINUSE (issue 49).
        if let closeFrom = Self.addCloseFrom { _ = closeFrom(&actions, 3) }
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { for argument in argv { free(argument) } }
        var pid = pid_t()
        let spawned = posix_spawn(&pid, executable, &actions, nil, argv, environ)
        close(toChild[0])
        close(fromChild[1])
        guard spawned == 0 else {
            close(toChild[1])
            close(fromChild[0])
            return nil
        }
        return PipedChild(pid: pid, input: toChild[1], output: fromChild[0])
    }

    /// Writes all of `bytes` to the child's stdin; false when it stopped reading (it died).
    public func write(_ bytes: [UInt8]) -> Bool {
        Self.withSIGPIPEBlocked {
            bytes.withUnsafeBytes { writeFully(input, $0.baseAddress, $0.count) }
        }
    }

    /// Runs `body` with SIGPIPE blocked on this thread, then discards a SIGPIPE it raised: a write to a
    /// child that died fails with EPIPE instead of ending the process (the app, or the collector).
    public static func withSIGPIPEBlocked<T>(_ body: () -> T) -> T {
        var pipeOnly = sigset_t()
        sigemptyset(&pipeOnly)
        sigaddset(&pipeOnly, SIGPIPE)
        var previous = sigset_t()
        pthread_sigmask(SIG_BLOCK, &pipeOnly, &previous)
        let result = body()
        var pending = sigset_t()
        if sigpending(&pending) == 0, sigismember(&pending, SIGPIPE) == 1, sigismember(&previous, SIGPIPE) == 0 {
            var zero = timespec()
            _ = sigtimedwait(&pipeOnly, nil, &zero)
        }
        pthread_sigmask(SIG_SETMASK, &previous, nil)
        return result
    }

    /// glibc's `posix_spawn_file_actions_addclosefrom_np` (2.34 and later): looked up at run time,
    /// since Swift's Glibc module does not declare the GNU extensions of `spawn.h`. Without it (an
    /// older glibc) a helper inherits the descriptors the app did not mark close-on-exec.
    private typealias AddCloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
    private static let addCloseFrom: AddCloseFrom? = dlsym(nil, "posix_spawn_file_actions_addclosefrom_np").map {
        unsafeBitCast($0, to: AddCloseFrom.self)
    }

    /// A pipe whose ends other children do not inherit (posix_spawn's dup2 gives the child its copies).
    private static func makePipe(_ ends: inout [Int32]) -> Bool {
        guard pipe(&ends) == 0 else { return false }
        for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        return true
    }
}
