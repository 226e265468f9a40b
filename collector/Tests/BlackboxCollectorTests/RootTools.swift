import BlackboxTestSupport
import CollectorTestSupport
import Foundation

/// The root package's programs (`blackbox`, `blackbox-example`), run as processes. `make
/// test-collector` builds them first and names their directory in `BLACKBOX_BIN_DIR`.
enum Tool {
    static var binDirectory: String {
        if let directory = ProcessInfo.processInfo.environment["BLACKBOX_BIN_DIR"] { return directory }
        // collector/Tests/BlackboxCollectorTests/RootTools.swift → <root>/.build/debug
        return URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent(".build/debug").path
    }

    struct Result {
        var status: Int32
        /// The signal that ended the process, if one did.
        var signal: Int32?
        var stdout: String
        var stderr: String
    }

    /// A started program whose output goes to files (pipes could fill and stall it).
    final class Running {
        let process = Process()
        private let output = TemporaryDirectory(prefix: "tool-output")
        var stdoutPath: String { "\(output.path)/stdout" }
        var stderrPath: String { "\(output.path)/stderr" }

        init(_ executable: String, _ arguments: [String], environment: [String: String]) throws {
            var merged = ProcessInfo.processInfo.environment
            for name in ["BLACKBOX_SERVER", "BLACKBOX_KEY", "BLACKBOX_CONFIG", "XDG_CONFIG_HOME"] { merged[name] = nil }
            merged.merge(environment) { $1 }
            process.executableURL = URL(fileURLWithPath: executable)
            process.arguments = arguments
            process.environment = merged
            _ = FileManager.default.createFile(atPath: stdoutPath, contents: nil)
            _ = FileManager.default.createFile(atPath: stderrPath, contents: nil)
            process.standardOutput = FileHandle(forWritingAtPath: stdoutPath)
            process.standardError = FileHandle(forWritingAtPath: stderrPath)
            try process.run()
        }

        func kill(_ signal: Int32) {
            Foundation.kill(process.processIdentifier, signal)
            // It was just signalled; a child that outlives this is killed by the deadline.
            try? process.waitForExit(within: .seconds(60))
        }

        /// Waits with `Task.sleep`, not `waitUntilExit`: tests run in parallel on the small cooperative
        /// pool, and a thread blocked there delays every other test's sleeps and servers (a 2 s sleep
        /// took over 15 s under load, and timing-based tests failed).
        /// (The end is asked of the kernel, `ChildExit`: Foundation can miss a child's exit.)
        func wait() async throws -> Result {
            _ = try await ChildExit.wait(for: process)
            defer { output.remove() }
            let (status, signal) = ChildExit.outcome(of: process)
            return Result(
                status: status, signal: signal,
                stdout: (try? String(contentsOfFile: stdoutPath, encoding: .utf8)) ?? "",
                stderr: (try? String(contentsOfFile: stderrPath, encoding: .utf8)) ?? "")
        }
    }

    static func start(_ name: String, _ arguments: [String], environment: [String: String] = [:]) throws -> Running {
        try Running("\(binDirectory)/\(name)", arguments, environment: environment)
    }

    static func run(_ name: String, _ arguments: [String], environment: [String: String] = [:]) async throws
        -> Result
    {
        try await start(name, arguments, environment: environment).wait()
    }

    /// Writes an executable script by way of a child process (`cp` from a plain file), so that this
    /// process never holds the script open for writing: a program spawned meanwhile by another test
    /// would inherit that descriptor, and exec'ing the script would then fail with ETXTBSY ("text
    /// file busy") — a test's fake symbolizer died at once that way.
    @discardableResult
    static func installScript(_ text: String, at path: String) throws -> String {
        let source = path + ".source"
        try text.write(toFile: source, atomically: false, encoding: .utf8)
        guard try BlackboxCollectorTests.run("/bin/cp", [source, path], in: "/") == 0, chmod(path, 0o755) == 0 else {
            throw CocoaError(.fileWriteUnknown)
        }
        return path
    }

    /// Output a running program has written so far.
    static func output(of running: Running) -> (stdout: String, stderr: String) {
        (
            (try? String(contentsOfFile: running.stdoutPath, encoding: .utf8)) ?? "",
            (try? String(contentsOfFile: running.stderrPath, encoding: .utf8)) ?? ""
        )
    }

    /// Log lines of random hex (compresses to about half), `bytes` long in all.
    static func randomLines(bytes: Int) -> String {
        var generator = SystemRandomNumberGenerator()
        var text = ""
        text.reserveCapacity(bytes + 100)
        while text.utf8.count < bytes {
            text += "2026-11-21T10:00:00.000Z INFO  shop: "
            for _ in 0..<4 { text += String(generator.next() as UInt64, radix: 16) }
            text += "\n"
        }
        return text
    }
}

/// A TCP socket bound to an ephemeral loopback port; listening (but never accepting) when asked.
struct LoopbackSocket {
    let descriptor: Int32
    let port: Int

    init(listening: Bool) throws {
        descriptor = Foundation.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let descriptor = descriptor
        let ready = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, length) == 0 && (!listening || listen(descriptor, 16) == 0)
                    && getsockname(descriptor, $0, &length) == 0
            }
        }
        guard ready else {
            let failure = POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
            close(descriptor)
            throw failure
        }
        port = Int(UInt16(bigEndian: address.sin_port))
    }
}
