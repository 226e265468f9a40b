import BlackboxTestSupport
import Foundation

/// nginx (Debian's package) as a child process, never a daemon, balancing loopback ports; for the
/// scale-out test and the benchmark.
public final class LocalNginx: @unchecked Sendable {
    let process = Process()
    public let port: Int

    public init(directory: String, upstreams: [Int]) throws {
        port = PostgresServer.freePort()
        for folder in ["body", "proxy"] {
            try FileManager.default.createDirectory(
                atPath: "\(directory)/\(folder)", withIntermediateDirectories: true,
                attributes: [.posixPermissions: 0o777])
        }
        let servers = upstreams.map { "server 127.0.0.1:\($0) max_fails=1 fail_timeout=5s;" }.joined(separator: " ")
        // A resent POST is safe here: the collector is idempotent by Upload-Id.
        let configuration = """
            \(getuid() == 0 ? "user root;" : "")
            worker_processes 1;
            error_log \(directory)/error.log;
            pid \(directory)/nginx.pid;
            events { worker_connections 512; }
            http {
                access_log off;
                client_body_temp_path \(directory)/body;
                proxy_temp_path \(directory)/proxy;
                client_max_body_size 100m;
                upstream collectors { \(servers) }
                server {
                    listen 127.0.0.1:\(port);
                    location / {
                        proxy_pass http://collectors;
                        proxy_next_upstream error timeout http_502 http_503 non_idempotent;
                    }
                }
            }
            """
        try configuration.write(toFile: "\(directory)/nginx.conf", atomically: true, encoding: .utf8)
        process.executableURL = URL(fileURLWithPath: "/usr/sbin/nginx")
        process.arguments = ["-p", directory, "-c", "\(directory)/nginx.conf", "-g", "daemon off;"]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        for _ in 0..<100 {
            if acceptsConnections(port) { return }
            usleep(100_000)
        }
    }

    public func stop() {
        process.terminate()
        // nginx ends at once on SIGTERM; one that does not is killed at the deadline.
        try? process.waitForExit(within: .seconds(30))
    }
}

/// True when something accepts connections on the loopback port.
func acceptsConnections(_ port: Int) -> Bool {
    guard let fd = connectedToLoopback(port) else { return false }
    close(fd)
    return true
}

/// A socket connected to 127.0.0.1:`port` (the caller closes it), or nil when nothing accepts there.
func connectedToLoopback(_ port: Int) -> Int32? {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { return nil }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = UInt16(port).bigEndian
    let connected = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
        }
    }
    guard connected else {
        close(fd)
        return nil
    }
    return fd
}
