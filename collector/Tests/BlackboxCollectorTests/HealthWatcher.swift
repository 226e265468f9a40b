import Foundation

/// Asks a collector's `/health` every 100 ms from a process of its own and keeps the slowest answer,
/// the 99th percentile and the failures. Measured from this test process, the time included waiting for one of its two
/// cooperative threads, busy with a hundred other tests: 1–4 s "answers" from a server that
/// answered in milliseconds.
final class HealthWatcher {
    private let running: Tool.Running
    private let results: String

    static let script = """
        import json, os, sys, time, urllib.request
        url, out = sys.argv[1], sys.argv[2]
        times, failures = [], 0
        while True:
            started = time.monotonic()
            try:
                with urllib.request.urlopen(url, timeout=30) as answer:
                    if answer.status != 200:
                        failures += 1
            except Exception:
                failures += 1
            times.append(time.monotonic() - started)
            ordered = sorted(times)
            p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
            with open(out + ".tmp", "w") as file:
                json.dump({"worst": ordered[-1], "p99": p99, "failures": failures, "requests": len(times)}, file)
            os.replace(out + ".tmp", out)
            time.sleep(0.1)
        """

    init(baseURL: String, directory: String) throws {
        results = "\(directory)/health-\(UUID().uuidString).json"
        running = try Tool.Running(
            "/usr/bin/python3", ["-c", Self.script, "\(baseURL)/health", results], environment: [:])
    }

    /// Stops asking; the slowest answer, the 99th percentile, the failures and how many were asked.
    func stop() -> (worst: Duration, p99: Duration, failures: Int, requests: Int) {
        running.kill(SIGKILL)
        guard let data = FileManager.default.contents(atPath: results),
            let values = try? JSONSerialization.jsonObject(with: data) as? [String: Any]
        else { return (.zero, .zero, 0, 0) }
        func duration(_ key: String) -> Duration { .milliseconds(Int(((values[key] as? Double) ?? 0) * 1000)) }
        return (duration("worst"), duration("p99"), values["failures"] as? Int ?? 0, values["requests"] as? Int ?? 0)
    }
}
