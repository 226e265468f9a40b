import BlackboxTestSupport
import Foundation

/// The collector as a separate process, for the tests that kill it or drive it from other
/// programs, and for the benchmark. Keys are empty unless this instance created the first project or
/// its data directory keeps the bootstrap credentials.
public final class CollectorProcess: @unchecked Sendable {
    public let process: Process
    public let baseURL: String
    public let ingestKey: String
    public let adminToken: String
    /// What it printed at start.
    public let banner: String
    /// Its standard error (`<data directory>.stderr`): the errors behind a 500.
    public let errorLog: String

    /// The last `lines` lines of its standard error.
    public func errors(lastLines lines: Int = 20) -> String {
        let text = String(decoding: FileManager.default.contents(atPath: errorLog) ?? Data(), as: UTF8.self)
        return text.split(separator: "\n").suffix(lines).joined(separator: "\n")
    }

    /// `BLACKBOX_COLLECTOR_BIN`, else the binary next to the running test bundle.
    public static var executable: String {
        if let path = ProcessInfo.processInfo.environment["BLACKBOX_COLLECTOR_BIN"] { return path }
        // Next to the test bundle: .build/<triple>/debug/
        var directory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        while directory.path != "/"
            && !FileManager.default.fileExists(atPath: directory.appendingPathComponent("blackbox-collector").path)
        {
            directory = directory.deletingLastPathComponent()
        }
        return directory.appendingPathComponent("blackbox-collector").path
    }

    public init(
        dataDirectory: String, port: Int = 0, arguments: [String] = [], environment: [String: String] = [:],
        executable: String = CollectorProcess.executable
    ) throws {
        process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        process.arguments = ["serve", "--data-dir", dataDirectory, "--port", "\(port)", "--quiet"] + arguments
        let out = Pipe()
        process.standardOutput = out
        // Beside the data directory, for a test to show when the collector answered 500.
        errorLog =
            dataDirectory.hasSuffix("/") ? String(dataDirectory.dropLast()) + ".stderr" : dataDirectory + ".stderr"
        _ = FileManager.default.createFile(atPath: errorLog, contents: nil)
        process.standardError = FileHandle(forWritingAtPath: errorLog) ?? FileHandle.nullDevice
        try process.run()
        var seen = ""
        // The banner is one write; its "database:" line comes after the address and before the keys
        // (which only the instance that created the first project prints).
        while !seen.contains("  database:") {
            let chunk = out.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            seen += String(decoding: chunk, as: UTF8.self)
        }
        func value(_ label: String) -> String {
            seen.split(separator: "\n").first { $0.contains(label) }.map { String($0.split(separator: " ").last ?? "") }
                ?? ""
        }
        banner = seen
        baseURL = value("listening on")
        // Printed at the first start only; later starts read the file it keeps (as people do).
        let saved =
            FileManager.default.contents(atPath: "\(dataDirectory)/bootstrap-credentials")
            .flatMap { try? JSONSerialization.jsonObject(with: $0) as? [String: Any] } ?? [:]
        let printed = seen.contains("ingest key:")
        ingestKey = printed ? value("ingest key:") : saved["ingestKey"] as? String ?? ""
        adminToken = printed ? value("admin token:") : saved["adminToken"] as? String ?? ""
    }

    /// Starts it on a thread of its own: waiting for its banner on one of a test process's few
    /// cooperative threads held up every test running beside it.
    public static func start(
        dataDirectory: String, port: Int = 0, arguments: [String] = [], environment: [String: String] = [:],
        executable: String = CollectorProcess.executable
    ) async throws -> CollectorProcess {
        try await withCheckedThrowingContinuation { continuation in
            Thread {
                continuation.resume(
                    with: Result {
                        try CollectorProcess(
                            dataDirectory: dataDirectory, port: port, arguments: arguments, environment: environment,
                            executable: executable)
                    })
            }.start()
        }
    }

    /// Sends `signal` and waits for the exit, at most `deadline`, then sends SIGKILL (and says so on
    /// stderr): a collector that does not stop must not hang the test run. Polls the kernel's view of
    /// the process (`hasExited`), never `Process.isRunning` or `waitUntilExit` (see `ChildExit`).
    public func kill(_ signal: Int32, deadline: Duration = .seconds(60)) {
        Foundation.kill(process.processIdentifier, signal)
        let end = ContinuousClock.now + deadline
        while !hasExited && ContinuousClock.now < end { usleep(20_000) }
        if !hasExited {
            FileHandle.standardError.write(
                Data(
                    "collector \(process.processIdentifier) still running \(deadline) after signal \(signal): killed\n"
                        .utf8))
            Foundation.kill(process.processIdentifier, SIGKILL)
            let killed = ContinuousClock.now + .seconds(10)
            while !hasExited && ContinuousClock.now < killed { usleep(20_000) }
        }
    }

    /// Whether the process has ended (`ChildExit`: never Foundation's `isRunning`).
    public var hasExited: Bool { ChildExit.of(process.processIdentifier) != .running }

    /// Resident set of the collector and every process it started (the symbolizers), in MiB.
    public var treeRSS: Double {
        func descendants(of pid: Int32) -> [Int32] {
            let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
            let children = tasks.flatMap { task in
                ((try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/children", encoding: .utf8)) ?? "")
                    .split(separator: " ").compactMap { Int32($0) }
            }
            return children + children.flatMap(descendants)
        }
        return ([process.processIdentifier] + descendants(of: process.processIdentifier)).reduce(0) {
            $0 + Self.statusMiB(of: $1, "VmRSS:")
        }
    }

    /// Peak resident set (VmHWM) in MiB.
    public var peakRSS: Double { Self.statusMiB(of: process.processIdentifier, "VmHWM:") }

    /// A kB field of /proc/<pid>/status in MiB; 0 when the process is gone.
    static func statusMiB(of pid: Int32, _ field: String) -> Double {
        let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix(field) } ?? ""
        return (Double(line.split(separator: " ").dropFirst().first ?? "") ?? 0) / 1024
    }
}
