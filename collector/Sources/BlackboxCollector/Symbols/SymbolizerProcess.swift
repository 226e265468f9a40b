import BlackboxFormat
import BlackboxSymbols
import BlackboxSystem
import Foundation
import NIOPosix
import Synchronization

/// One long-lived `llvm-symbolizer` answering every lookup of the symbolication service, one address
/// at a time (an input line, then its JSON output line), instead of a process per report: starting it
/// and loading a debug file cost far more than a lookup, and it keeps the files it loaded.
///
/// Hand-written over Foundation's `Process`: a line protocol needs reads with a deadline (a wedged
/// symbolizer must not stall the service) and writes that fail with EPIPE instead of killing the
/// collector when the child died (`PipedChild`). Every call runs on the one thread of its own pool.
/// A failed or timed-out process is killed and started again at the next lookup.
final class SymbolizerProcess: Sendable {
    let executable: String
    /// How long one call's answers (one file's addresses in one report) may take in all: a first
    /// lookup in a large debug file reads its index; a hostile one may take minutes per address.
    let timeout: Duration
    /// The child's address-space limit (`RLIMIT_AS`, set right after it starts and before its first
    /// lookup): a hostile debug file makes it fail, not the machine swap. 0: none.
    let addressSpaceLimit: UInt64
    /// Past this resident size after a lookup the child is restarted: it keeps every file it loaded.
    let residentBudget: UInt64
    private let state = Mutex(Child?.none)
    /// The running child's pid, readable while a lookup holds `state` (for `stop`).
    private let runningPID = Atomic<Int32>(0)
    private let thread: NIOThreadPool

    /// The running symbolizer; killed and reaped when dropped.
    private final class Child {
        let process: PipedChild
        var buffered: [UInt8] = []

        init(_ process: PipedChild) { self.process = process }

        deinit {
            close(process.input)
            close(process.output)
            kill(process.pid, SIGKILL)
            var status: Int32 = 0
            _ = retryingEINTR { waitpid(process.pid, &status, 0) }
        }
    }

    init(
        executable: String, timeout: Duration = .seconds(30), addressSpaceLimit: UInt64 = 2 << 30,
        residentBudget: UInt64 = 384 << 20
    ) {
        self.executable = executable
        self.timeout = timeout
        self.addressSpaceLimit = addressSpaceLimit
        self.residentBudget = residentBudget
        thread = NIOThreadPool(numberOfThreads: 1)
        thread.start()
    }

    // Not the blocking `syncShutdownGracefully`: the last reference may go on a cooperative thread (or
    // on the pool's own thread, the end of a lookup), and a thread waiting there to join it would
    // hold that thread for the join, or for ever.
    deinit { thread.shutdownGracefully { _ in } }

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
        state.withLock { child -> [[CrashReport.Symbol]]? in
            if child == nil { child = spawn() }
            guard let current = child else { return nil }
            var results: [[CrashReport.Symbol]] = []
            let deadline = ContinuousClock.now + timeout
            // A chunk's lines are written at once (well within a pipe's buffer, so the write cannot
            // wait for the child, which may be waiting for us to read), then its answers read.
            let perWrite = max(1, Self.bytesPerWrite / (file.utf8.count + 32))
            for chunk in stride(from: 0, to: addresses.count, by: perWrite) {
                let lines = addresses[chunk..<min(chunk + perWrite, addresses.count)].map {
                    "CODE \"\(file)\" 0x\(String($0, radix: 16))\n"
                }
                guard let answers = ask(lines, child: current, deadline: deadline) else {
                    runningPID.store(0, ordering: .relaxed)
                    child = nil  // killed and reaped by its deinit; the next lookup starts another
                    return nil
                }
                results += answers.map(SymbolizerOutput.symbols(fromJSONLine:))
            }
            if let resident = Self.residentBytes(of: current.process.pid), resident > residentBudget {
                child = nil  // the next lookup starts a fresh one
                runningPID.store(0, ordering: .relaxed)
            }
            return results
        }
    }

    /// The running child's pid, nil when none runs.
    var childPID: Int32? {
        let pid = runningPID.load(ordering: .relaxed)
        return pid > 0 ? pid : nil
    }

    /// Ends the running child at once (a lookup waiting on it returns nil): a graceful shutdown must
    /// not wait for a lookup that may take `timeout`.
    func stop() {
        let pid = runningPID.exchange(0, ordering: .relaxed)
        if pid > 0 { kill(pid, SIGKILL) }
    }

    /// VmRSS of a process, from /proc.
    static func residentBytes(of pid: Int32) -> UInt64? {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
            let kilobytes = line.split(separator: " ").dropFirst().first.flatMap({ UInt64($0) })
        else { return nil }
        return kilobytes * 1024
    }

    /// Bytes of lines per write: half a pipe's 64 KiB.
    static let bytesPerWrite = 32 << 10

    /// One answer line per input line, all before `deadline`.
    private func ask(_ lines: [String], child current: Child, deadline: ContinuousClock.Instant) -> [[UInt8]]? {
        guard current.process.write(Array(lines.joined().utf8)) else { return nil }
        var answers: [[UInt8]] = []
        while answers.count < lines.count {
            guard let answer = readLine(child: current, deadline: deadline) else { return nil }
            answers.append(answer)
        }
        return answers
    }

    private func readLine(child current: Child, deadline: ContinuousClock.Instant) -> [UInt8]? {
        while true {
            if let newline = current.buffered.firstIndex(of: 0x0A) {
                let answer = Array(current.buffered[..<newline])
                current.buffered.removeSubrange(...newline)
                return answer
            }
            let remaining = deadline - ContinuousClock.now
            guard remaining > .zero, current.buffered.count < 16 << 20 else { return nil }
            var descriptor = pollfd(fd: current.process.output, events: Int16(POLLIN), revents: 0)
            let milliseconds = Int32(clamping: remaining.components.seconds * 1000 + 1)
            let ready = poll(&descriptor, 1, milliseconds)
            // Interrupted: the deadline is computed again.
            if ready < 0 && errno == EINTR { continue }
            guard ready > 0 else { return nil }
            var chunk = [UInt8](repeating: 0, count: 64 << 10)
            let count = retryingEINTR {
                chunk.withUnsafeMutableBytes { read(current.process.output, $0.baseAddress, $0.count) }
            }
            guard count > 0 else { return nil }
            current.buffered += chunk[..<count]
        }
    }

    private func spawn() -> Child? {
        // The address-space limit is set by a shell that then execs the symbolizer (same pid): Swift's
        // Glibc module has no prlimit, and posix_spawn cannot set limits.
        let spawned =
            addressSpaceLimit > 0
            ? PipedChild.spawn(
                "/bin/sh",
                ["-c", "ulimit -v \(addressSpaceLimit / 1024) && exec \"$0\" \"$@\"", executable]
                    + SymbolizerOutput.arguments)
            : PipedChild.spawn(executable, SymbolizerOutput.arguments)
        guard let process = spawned else { return nil }
        // Background work: the CPU goes to ingest first (an upload's inspection, its transaction).
        setpriority(__priority_which_t(PRIO_PROCESS.rawValue), id_t(process.pid), 19)
        runningPID.store(process.pid, ordering: .relaxed)
        return Child(process)
    }
}
