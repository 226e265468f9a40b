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

    /// Waits (polling, never blocking a thread for long) until the child has ended.
    public static func wait(for process: Process) async -> ChildExit {
        while true {
            let state = of(process.processIdentifier)
            if state != .running { return state }
            try? await Task.sleep(for: .milliseconds(20))
        }
    }

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

extension Process {
    /// `waitUntilExit`, asking the kernel whether the child ended (`ChildExit`), polling.
    public func waitForExit() {
        while ChildExit.of(processIdentifier) == .running { usleep(5_000) }
    }

    /// The exit status (-1 when a signal ended it) once `waitForExit` returned.
    public var exitStatus: Int32 { ChildExit.outcome(of: self).status }
}

/// A program run to its end with its output in a temporary file, not a pipe: a pipe's write end
/// that a sibling spawned at the same moment inherits keeps the reader from ever seeing EOF while
/// that sibling lives (the pipe's side of `ChildExit`'s problem).
public enum ChildRun {
    public static func run(
        _ executable: String, _ arguments: [String], errors: Errors = .merged, environment: [String: String]? = nil,
        in directory: String? = nil
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
        process.waitForExit()
        return (process.exitStatus, (try? Data(contentsOf: file)) ?? Data())
    }

    public enum Errors: Sendable {
        /// stderr into the same file as stdout.
        case merged
        case discarded
    }
}
