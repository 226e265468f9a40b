import BlackboxTestSupport
import Foundation
import Synchronization

/// A real PostgreSQL server (Debian's package, installed by `make test-deps`) in a temporary
/// directory, started on first use and stopped when the process exits; for the tests (each gets a
/// database of its own) and the benchmark. As root (CI), the server runs as the `postgres` user:
/// PostgreSQL refuses root.
public final class PostgresServer: @unchecked Sendable {
    public let port: Int
    let directory: String
    let binaries: String
    private let server: Process

    static let shared = Mutex<Result<PostgresServer, PostgresUnavailable>?>(nil)

    public struct PostgresUnavailable: Error, CustomStringConvertible {
        public var description: String
    }

    /// The running server, started on first call. `durable: false` (the tests) turns fsync off;
    /// the benchmark keeps PostgreSQL's durable defaults. The first call decides.
    static func running(durable: Bool = false) throws -> PostgresServer {
        try shared.withLock { state in
            if let state { return try state.get() }
            let result = Result { () throws(PostgresUnavailable) -> PostgresServer in
                try PostgresServer(durable: durable)
            }
            state = result
            return try result.get()
        }
    }

    /// A fresh, empty database on the shared server (started on first use): its URL.
    ///
    /// Starting the server (initdb, then waiting for it to accept connections) takes seconds on a
    /// loaded machine, and `createdb` a while too: both block a thread, so they run on a thread of
    /// their own. On the cooperative pool (two threads on two cores), the first test to start the
    /// server and a second one waiting for it held every test in the process for 30 s.
    public static func makeDatabase(durable: Bool = false) async throws -> String {
        try await offThePool { try running(durable: durable).makeDatabase() }
    }

    func makeDatabase() throws -> String {
        let name = "t_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased().prefix(20)
        let status = try Self.run(
            "\(binaries)/createdb", ["-h", "127.0.0.1", "-p", "\(port)", "-U", "blackbox", String(name)])
        guard status == 0 else { throw PostgresUnavailable(description: "createdb failed (\(status))") }
        return "postgres://blackbox@127.0.0.1:\(port)/\(name)"
    }

    private init(durable: Bool) throws(PostgresUnavailable) {
        let versions = ((try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib/postgresql")) ?? []).sorted()
        guard let version = versions.last else {
            throw PostgresUnavailable(description: "PostgreSQL is not installed (make test-deps installs it)")
        }
        binaries = "/usr/lib/postgresql/\(version)/bin"
        directory = NSTemporaryDirectory() + "blackbox-pg-\(UUID().uuidString)"
        let asRoot = getuid() == 0
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            if asRoot, let user = getpwnam("postgres") {
                chown(directory, user.pointee.pw_uid, user.pointee.pw_gid)
            }
            let initdb = try Self.run(
                "\(binaries)/initdb",
                ["-D", "\(directory)/data", "-U", "blackbox", "--auth=trust", "-E", "UTF8", "--no-sync"],
                asPostgres: asRoot)
            guard initdb == 0 else { throw PostgresUnavailable(description: "initdb failed (\(initdb))") }
            // The server runs as a child of this process, not through `pg_ctl start`: a daemon would
            // inherit the descriptor Foundation's Process watches, and waiting on pg_ctl would hang.
            // `freePort` only saw the port free: another fixture can pick and bind it before PostgreSQL
            // does, and PostgreSQL then exits. That is retried on another port.
            var started: (Process, Int)?
            var exits: [Int32] = []
            for _ in 0..<3 where started == nil {
                let candidate = Self.freePort()
                let process = Process()
                let command =
                    [
                        "\(binaries)/postgres", "-D", "\(directory)/data", "-p", "\(candidate)", "-k", directory,
                        "-c", "listen_addresses=127.0.0.1", "-c", "max_connections=200",
                        // A deadlock between two instances' transactions (which the store runs again)
                        // is found in 0.1 s instead of PostgreSQL's default second.
                        "-c", "deadlock_timeout=100ms",
                    ] + (durable ? [] : ["-c", "fsync=off"])
                process.executableURL = URL(fileURLWithPath: asRoot ? "/usr/sbin/runuser" : command[0])
                process.arguments = asRoot ? ["-u", "postgres", "--"] + command : Array(command.dropFirst())
                process.standardOutput = FileHandle.nullDevice
                process.standardError = FileHandle(forWritingAtPath: "/dev/null")
                try process.run()
                // Whether it still runs is asked of the kernel (`ChildExit`): Foundation's `isRunning`
                // can stay true for a child that has ended, and `waitUntilExit` then never returns.
                for _ in 0..<300 where started == nil && ChildExit.of(process.processIdentifier) == .running {
                    if try Self.run("\(binaries)/pg_isready", ["-h", "127.0.0.1", "-p", "\(candidate)", "-q"]) == 0 {
                        started = (process, candidate)
                    } else {
                        usleep(100_000)
                    }
                }
                if started == nil {
                    if ChildExit.of(process.processIdentifier) == .running { process.terminate() }
                    try? process.waitForExit(within: .seconds(30))
                    exits.append(process.exitStatus)
                }
            }
            guard let (process, boundPort) = started else {
                throw PostgresUnavailable(description: "PostgreSQL did not start (exit statuses \(exits))")
            }
            server = process
            port = boundPort
        } catch let error as PostgresUnavailable {
            throw error
        } catch {
            throw PostgresUnavailable(description: "\(error)")
        }
        Self.stopAtExit(binaries: binaries, directory: directory, asRoot: asRoot)
    }

    private static let stopCommand = Mutex<[String]?>(nil)

    private static func stopAtExit(binaries: String, directory: String, asRoot: Bool) {
        let command = ["\(binaries)/pg_ctl", "-D", "\(directory)/data", "-m", "immediate", "stop"]
        stopCommand.withLock { $0 = asRoot ? ["/usr/sbin/runuser", "-u", "postgres", "--"] + command : command }
        atexit {
            guard let command = PostgresServer.stopCommand.withLock({ $0 }) else { return }
            let process = Process()
            process.executableURL = URL(fileURLWithPath: command[0])
            process.arguments = Array(command.dropFirst())
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try? process.run()
            try? process.waitForExit(within: .seconds(30))
            if let data = command.last(where: { $0.hasSuffix("/data") }) {
                try? FileManager.default.removeItem(atPath: String(data.dropLast(5)))
            }
        }
    }

    static func run(_ path: String, _ arguments: [String], asPostgres: Bool = false) throws -> Int32 {
        let process = Process()
        if asPostgres {
            process.executableURL = URL(fileURLWithPath: "/usr/sbin/runuser")
            process.arguments = ["-u", "postgres", "--", path] + arguments
        } else {
            process.executableURL = URL(fileURLWithPath: path)
            process.arguments = arguments
        }
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        try process.waitForExit()
        return process.exitStatus
    }

    /// Ports below Linux's ephemeral range (32768-60999): the kernel never hands one of these to a bind
    /// to port 0, so a fixture's port is not taken by another test's server between `freePort` and the
    /// fixture's own bind, nor while a fixture is stopped and started again on it.
    public static let fixturePorts = 20_000..<32_768

    /// A port from `fixturePorts` that nothing is bound to right now and that no fixture of this
    /// process was given before; the kernel's choice (port 0) if 100 random tries found none. A port
    /// is handed out once per process: a fixture stopped and started again on its ports (SeaweedFS
    /// mid-run) found one taken by another test's server started meanwhile, and its readiness probe
    /// took that server's answer for its own.
    public static func freePort() -> Int {
        for _ in 0..<100 {
            let port = Int.random(in: fixturePorts)
            guard handedOut.withLock({ $0.insert(port).inserted }) else { continue }
            if bindOnce(port: port) == port { return port }
        }
        return bindOnce(port: 0) ?? 0
    }

    private static let handedOut = Mutex<Set<Int>>([])

    /// Binds a socket to 127.0.0.1:`port` and closes it: the port it got, or nil.
    private static func bindOnce(port: Int) -> Int? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) }
        }
        guard bound == 0 else { return nil }
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}
