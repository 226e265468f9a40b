import Foundation

/// Asks a collector's `/health` every 100 ms from a process of its own and keeps the slowest answer,
/// the 99th percentile and the failures. Measured from this test process, the time included waiting for one of its two
/// cooperative threads, busy with a hundred other tests: 1–4 s "answers" from a server that
/// answered in milliseconds.
///
/// The watcher raises its own priority where it may (as root in CI): what is measured is the
/// collector, not the watcher waiting for a core beside a build. It times the TCP connect apart from
/// the answer and reads the kernel's listen-queue drop counters, so that a slow sample says whether
/// a SYN was dropped (the client's kernel sends it again a second later: answers of 1.0x s) or the
/// server was slow to answer. A CI run of `87a71a2` missed the bar once by 11 ms with nothing to tell
/// the two apart.
final class HealthWatcher {
    private let running: Tool.Running
    private let results: String

    struct Watched: CustomStringConvertible {
        var worst: Duration
        var p99: Duration
        var failures: Int
        var requests: Int
        /// The slowest TCP connect alone.
        var slowestConnect: Duration
        /// The machine's listen-queue overflows and drops while watching (all listeners, all tests).
        var listenDrops: Int

        var description: String {
            "/health p99 \(p99), slowest \(worst) (its slowest connect \(slowestConnect)) of \(requests) requests, "
                + "\(failures) failed; listen-queue drops on the machine meanwhile: \(listenDrops)"
        }
    }

    static let script = """
        import json, os, socket, sys, time
        url, out = sys.argv[1], sys.argv[2]
        host, port = url.split("//")[1].split("/")[0].rsplit(":", 1)
        try:
            os.nice(-10)
        except OSError:
            pass
        def listen_drops():
            try:
                lines = open("/proc/net/netstat").read().split("\\n")
                for names, values in zip(lines[0::2], lines[1::2]):
                    if names.startswith("TcpExt:"):
                        row = dict(zip(names.split()[1:], values.split()[1:]))
                        return int(row.get("ListenOverflows", 0)) + int(row.get("ListenDrops", 0))
            except (OSError, ValueError):
                pass
            return 0
        first_drops = listen_drops()
        times, failures, slowest_connect = [], 0, 0.0
        request = ("GET /health HTTP/1.1\\r\\nHost: %s:%s\\r\\nConnection: close\\r\\n\\r\\n" % (host, port)).encode()
        while True:
            started = time.monotonic()
            try:
                with socket.create_connection((host, int(port)), timeout=30) as connection:
                    slowest_connect = max(slowest_connect, time.monotonic() - started)
                    connection.sendall(request)
                    answer = b""
                    while True:
                        chunk = connection.recv(4096)
                        if not chunk:
                            break
                        answer += chunk
                    if not answer.startswith(b"HTTP/1.1 200"):
                        failures += 1
            except Exception:
                failures += 1
            times.append(time.monotonic() - started)
            ordered = sorted(times)
            p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
            with open(out + ".tmp", "w") as file:
                json.dump({"worst": ordered[-1], "p99": p99, "failures": failures, "requests": len(times),
                           "slowestConnect": slowest_connect, "listenDrops": listen_drops() - first_drops}, file)
            os.replace(out + ".tmp", out)
            time.sleep(0.1)
        """

    init(baseURL: String, directory: String) throws {
        results = "\(directory)/health-\(UUID().uuidString).json"
        running = try Tool.Running(
            "/usr/bin/python3", ["-c", Self.script, "\(baseURL)/health", results], environment: [:])
    }

    /// Stops asking, and says what it saw.
    func stop() -> Watched {
        running.kill(SIGKILL)
        guard let data = FileManager.default.contents(atPath: results),
            let values = try? JSONSerialization.jsonObject(with: data) as? [String: Any]
        else {
            return Watched(worst: .zero, p99: .zero, failures: 0, requests: 0, slowestConnect: .zero, listenDrops: 0)
        }
        func duration(_ key: String) -> Duration { .milliseconds(Int(((values[key] as? Double) ?? 0) * 1000)) }
        return Watched(
            worst: duration("worst"), p99: duration("p99"), failures: values["failures"] as? Int ?? 0,
            requests: values["requests"] as? Int ?? 0, slowestConnect: duration("slowestConnect"),
            listenDrops: values["listenDrops"] as? Int ?? 0)
    }
}
