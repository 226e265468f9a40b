import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// How a child process is doing, asked of the kernel without reaping it (`waitid` with `WNOWAIT`,
/// so Foundation's own bookkeeping is left alone).
///
/// Why not `Process.isRunning` / `waitUntilExit`: Foundation's `Process` on Linux learns of a child's
/// exit when a socket the child inherited closes, and a sibling spawned at the same moment can
/// inherit that socket too (swift-corelibs-foundation #4795). Its exit then goes unseen while the
/// sibling lives: `isRunning` stays true and `waitUntilExit` never returns. Tests that start
/// processes in parallel (collectors, PostgreSQL, the CLI) hung whole runs that way: a zombie, and a
/// test waiting for it forever.
public enum ChildExit: Equatable, Sendable {
    case running
    case exited(status: Int32)
    case signaled(signal: Int32)
    /// Reaped already (by Foundation, which then knows the status), or not our child.
    case reaped

    public static func of(_ pid: Int32) -> ChildExit {
        var info = siginfo_t()
        guard waitid(P_PID, id_t(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 else { return .reaped }
        let child = info._sifields._sigchld
        guard child.si_pid != 0 else { return .running }
        return info.si_code == Int32(CLD_EXITED) ? .exited(status: child.si_status) : .signaled(signal: child.si_status)
    }

    /// Waits (polling, never blocking a thread for long) until the child has ended. A child still
    /// running at the deadline is killed and the wait throws `ChildTimeout`: a test fails naming what
    /// it waited for instead of hanging the run.
    public static func wait(for process: Process, within deadline: Duration = defaultDeadline) async throws
        -> ChildExit
    {
        let end = ContinuousClock.now + deadline
        while true {
            let state = of(process.processIdentifier)
            if state != .running { return state }
            guard ContinuousClock.now < end else { throw ChildTimeout(process: process, deadline: deadline) }
            try? await Task.sleep(for: .milliseconds(20))
        }
    }

    /// How long a test waits for a child by default: far beyond what any child here takes on a loaded
    /// 2-core machine, far below the stage's watchdog (scripts/test-all.sh).
    public static let defaultDeadline: Duration = .seconds(300)

    /// The status and signal of an ended child, from the kernel or else from Foundation.
    public static func outcome(of process: Process) -> (status: Int32, signal: Int32?) {
        switch of(process.processIdentifier) {
        case .exited(let status): return (status, nil)
        case .signaled(let signal): return (-1, signal)
        case .running, .reaped:
            // Foundation reaped it: it sets its own state just after, on another thread, and its
            // getters trap until then. Never wait forever, never read them early.
            let end = ContinuousClock.now + .seconds(10)
            while process.isRunning && ContinuousClock.now < end { usleep(1_000) }
            guard !process.isRunning else { return (-1, nil) }
            return process.terminationReason == .uncaughtSignal
                ? (-1, process.terminationStatus) : (process.terminationStatus, nil)
        }
    }
}

/// A child that outlived the time a test gave it; it has been killed (SIGKILL) when this is thrown.
public struct ChildTimeout: Error, CustomStringConvertible {
    public let command: String
    public let deadline: Duration

    init(process: Process, deadline: Duration) {
        command = ([process.executableURL?.path ?? "?"] + (process.arguments ?? [])).joined(separator: " ")
        self.deadline = deadline
        kill(process.processIdentifier, SIGKILL)
    }

    public var description: String { "still running after \(deadline), killed: \(command.prefix(500))" }
}

extension Process {
    /// `waitUntilExit`, asking the kernel whether the child ended (`ChildExit`), polling; a child still
    /// running at the deadline is killed and `ChildTimeout` thrown. On return the child has ended, and
    /// has been reaped unless Foundation missed its end: until it is reaped its pid still answers
    /// `kill(pid, 0)`, and code that asks whether that process lives (a claim on a pending report)
    /// would think it does.
    public func waitForExit(within deadline: Duration = ChildExit.defaultDeadline) throws {
        let end = ContinuousClock.now + deadline
        while ChildExit.of(processIdentifier) == .running {
            guard ContinuousClock.now < end else { throw ChildTimeout(process: self, deadline: deadline) }
            usleep(5_000)
        }
        // Foundation reaps it on a thread of its own, normally within milliseconds.
        let reapedBy = ContinuousClock.now + .seconds(10)
        while ChildExit.of(processIdentifier) != .reaped && ContinuousClock.now < reapedBy { usleep(1_000) }
    }

    /// The exit status (-1 when a signal ended it) once `waitForExit` returned.
    public var exitStatus: Int32 { ChildExit.outcome(of: self).status }

    /// Waits for the end (`waitForExit`) and says how it ended: an exit status, or the signal that ended it.
    public func waitForOutcome(within deadline: Duration = ChildExit.defaultDeadline) throws -> (
        status: Int32, signal: Int32?
    ) {
        try waitForExit(within: deadline)
        return ChildExit.outcome(of: self)
    }
}

/// A program run to its end with its output in a temporary file, not a pipe: a pipe's write end
/// that a sibling spawned at the same moment inherits keeps the reader from ever seeing EOF while
/// that sibling lives (the pipe's side of `ChildExit`'s problem).
public enum ChildRun {
    public static func run(
        _ executable: String, _ arguments: [String], errors: Errors = .merged, environment: [String: String]? = nil,
        in directory: String? = nil, within deadline: Duration = ChildExit.defaultDeadline
    ) throws -> (status: Int32, output: Data) {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("child-output-\(UUID().uuidString)")
        _ = FileManager.default.createFile(atPath: file.path, contents: nil)
        defer { try? FileManager.default.removeItem(at: file) }
        let handle = try FileHandle(forWritingTo: file)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        if let environment { process.environment = environment }
        if let directory { process.currentDirectoryURL = URL(fileURLWithPath: directory) }
        process.standardOutput = handle
        process.standardError = errors == .merged ? handle : FileHandle.nullDevice
        do {
            try process.run()
        } catch {
            try? handle.close()
            throw error
        }
        try? handle.close()
        try process.waitForExit(within: deadline)
        return (process.exitStatus, (try? Data(contentsOf: file)) ?? Data())
    }

    public enum Errors: Sendable {
        /// stderr into the same file as stdout.
        case merged
        case discarded
    }
}
