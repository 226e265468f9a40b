import BlackboxFormat
import BlackboxSymbols
import Foundation
import NIOPosix
import Synchronization

/// One long-lived `llvm-symbolizer` answering every lookup of the symbolication service, one address
/// at a time (an input line, then its JSON output line), instead of a process per report: starting it
/// and loading a debug file cost far more than a lookup, and it keeps the files it loaded.
///
/// Hand-written over Foundation's `Process`: a line protocol needs reads with a deadline (a wedged
/// symbolizer must not stall the service) and writes that fail with EPIPE instead of killing the
/// collector when the child died. Every call runs on the one thread of its own pool, where SIGPIPE
/// is blocked. A failed or timed-out process is killed and started again at the next lookup.
final class SymbolizerProcess: Sendable {
    let executable: String
    /// How long one answer may take (a first lookup in a large debug file reads its index).
    let timeout: Duration
    private let state = Mutex(Child?.none)
    private let thread: NIOThreadPool

    private final class Child {
        let pid: pid_t
        let input: Int32
        let output: Int32
        var buffered: [UInt8] = []

        init(pid: pid_t, input: Int32, output: Int32) {
            self.pid = pid
            self.input = input
            self.output = output
        }

        deinit {
            close(input)
            close(output)
            kill(pid, SIGKILL)
            var status: Int32 = 0
            while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        }
    }

    init(executable: String, timeout: Duration = .seconds(30)) {
        self.executable = executable
        self.timeout = timeout
        thread = NIOThreadPool(numberOfThreads: 1)
        thread.start()
    }

    deinit { try? thread.syncShutdownGracefully() }

    /// `$BLACKBOX_COLLECTOR_SYMBOLIZER`, else the first `llvm-symbolizer` in `$PATH`, Debian's llvm
    /// package, or the Swift toolchain.
    static func locate(environment: [String: String] = ProcessInfo.processInfo.environment) -> String? {
        if let configured = environment["BLACKBOX_COLLECTOR_SYMBOLIZER"], !configured.isEmpty {
            return access(configured, X_OK) == 0 ? configured : nil
        }
        let directories = (environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":").map(String.init)
        for directory in directories + ["/usr/bin", "/usr/lib/llvm-14/bin", "/opt/swift/usr/bin"] {
            let candidate = "\(directory)/llvm-symbolizer"
            if access(candidate, X_OK) == 0 { return candidate }
        }
        return nil
    }

    /// Symbols for each address (link-time addresses in `file`), in order; nil when the symbolizer
    /// failed or took too long.
    func symbolicate(file: String, addresses: [UInt64]) async -> [[CrashReport.Symbol]]? {
        // llvm-symbolizer reads a quoted path; a path that cannot be quoted is not ours.
        guard !addresses.isEmpty, !file.contains("\""), !file.contains("\n") else {
            return addresses.isEmpty ? [] : nil
        }
        return try? await thread.runIfActive { self.symbolicateOnThread(file: file, addresses: addresses) }
    }

    private func symbolicateOnThread(file: String, addresses: [UInt64]) -> [[CrashReport.Symbol]]? {
        Self.blockSIGPIPE()
        return state.withLock { child -> [[CrashReport.Symbol]]? in
            if child == nil { child = spawn() }
            guard let current = child else { return nil }
            var results: [[CrashReport.Symbol]] = []
            for address in addresses {
                let line = "CODE \"\(file)\" 0x\(String(address, radix: 16))\n"
                guard let answer = ask(line, child: current) else {
                    child = nil  // killed and reaped by its deinit; the next lookup starts another
                    return nil
                }
                results.append(SymbolizerOutput.symbols(fromJSONLine: answer))
            }
            return results
        }
    }

    private func ask(_ line: String, child current: Child) -> [UInt8]? {
        let bytes = Array(line.utf8)
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes { raw in
                raw.baseAddress.map { write(current.input, $0 + offset, raw.count - offset) } ?? -1
            }
            if written < 0 && errno == EINTR { continue }
            guard written > 0 else { return nil }
            offset += written
        }
        let deadline = ContinuousClock.now + timeout
        while true {
            if let newline = current.buffered.firstIndex(of: 0x0A) {
                let answer = Array(current.buffered[..<newline])
                current.buffered.removeSubrange(...newline)
                return answer
            }
            let remaining = deadline - ContinuousClock.now
            guard remaining > .zero, current.buffered.count < 16 << 20 else { return nil }
            var descriptor = pollfd(fd: current.output, events: Int16(POLLIN), revents: 0)
            let milliseconds = Int32(clamping: remaining.components.seconds * 1000 + 1)
            let ready = poll(&descriptor, 1, milliseconds)
            if ready < 0 && errno == EINTR { continue }
            guard ready > 0 else { return nil }
            var chunk = [UInt8](repeating: 0, count: 64 << 10)
            let count = chunk.withUnsafeMutableBytes { read(current.output, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { return nil }
            current.buffered += chunk[..<count]
        }
    }

    private func spawn() -> Child? {
        var toChild: [Int32] = [-1, -1]
        var fromChild: [Int32] = [-1, -1]
        guard Self.makePipe(&toChild) else { return nil }
        guard Self.makePipe(&fromChild) else {
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
        let argv = ([executable] + SymbolizerOutput.arguments).map { strdup($0) } + [nil]
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
        // Background work: the CPU goes to ingest first (an upload's inspection, its transaction).
        setpriority(__priority_which_t(PRIO_PROCESS.rawValue), id_t(pid), 19)
        return Child(pid: pid, input: toChild[1], output: fromChild[0])
    }

    /// A pipe whose ends other children do not inherit (the child's copies, made by dup2, do).
    private static func makePipe(_ ends: inout [Int32]) -> Bool {
        guard pipe(&ends) == 0 else { return false }
        for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        return true
    }

    /// On this pool's thread only: a write to a symbolizer that died fails with EPIPE instead of
    /// delivering a signal that would end the collector.
    private static func blockSIGPIPE() {
        var set = sigset_t()
        sigemptyset(&set)
        sigaddset(&set, SIGPIPE)
        pthread_sigmask(SIG_BLOCK, &set, nil)
    }
}
