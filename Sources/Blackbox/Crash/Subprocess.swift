#if canImport(Glibc)
    import Glibc
#endif

/// Runs a helper program (llvm-symbolizer) with posix_spawn: input on stdin, output from stdout.
/// Hand-written because Foundation's `Process` would pull all of Foundation into the logging library.
enum Subprocess {
    struct Result {
        var status: Int32
        var output: [UInt8]
    }

    /// The input must fit in a pipe buffer (64 KiB) so writing it all first cannot deadlock.
    static func run(_ executable: String, _ arguments: [String], input: [UInt8]) -> Result? {
        var stdinPipe: [Int32] = [-1, -1]
        var stdoutPipe: [Int32] = [-1, -1]
        guard input.count < 60_000, makePipe(&stdinPipe) else { return nil }
        guard makePipe(&stdoutPipe) else {
            close(stdinPipe[0])
            close(stdinPipe[1])
            return nil
        }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, stdinPipe[0], 0)
        posix_spawn_file_actions_adddup2(&actions, stdoutPipe[1], 1)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)

        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { for argument in argv { free(argument) } }
        var pid = pid_t()
        let spawned = posix_spawn(&pid, executable, &actions, nil, argv, environ)
        close(stdinPipe[0])
        close(stdoutPipe[1])
        guard spawned == 0 else {
            close(stdinPipe[1])
            close(stdoutPipe[0])
            return nil
        }
        input.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                let n = write(stdinPipe[1], raw.baseAddress! + offset, raw.count - offset)
                if n < 0 && errno == EINTR { continue }
                if n <= 0 { break }
                offset += n
            }
        }
        close(stdinPipe[1])
        var output: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = chunk.withUnsafeMutableBytes { read(stdoutPipe[0], $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { break }
            output.append(contentsOf: chunk[0..<n])
        }
        close(stdoutPipe[0])
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        return Result(status: status, output: output)
    }

    /// A pipe whose ends are not inherited by other children (posix_spawn's dup2 clears the flag on
    /// the copies the child gets).
    private static func makePipe(_ ends: inout [Int32]) -> Bool {
        guard pipe(&ends) == 0 else { return false }
        for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        return true
    }

    /// The first executable named `name` in `$PATH`.
    static func findInPath(_ name: String, extraDirectories: [String] = []) -> String? {
        let path = getenv("PATH").map { String(cString: $0) } ?? "/usr/bin:/bin"
        for directory in path.split(separator: ":").map(String.init) + extraDirectories {
            let candidate = "\(directory)/\(name)"
            if access(candidate, X_OK) == 0 { return candidate }
        }
        return nil
    }
}
