import BlackboxTestSupport
import CollectorTestSupport
import Foundation
import Testing

/// A real Bugsink (PyPI `bugsink`, pinned) on loopback, set up by scripts/bugsink-peer.py: Django on
/// SQLite in a scratch directory, events digested as they arrive. The Sentry-compatible server the
/// Sentry delivery's tests send to, besides the collector's own endpoint.
final class BugsinkPeer {
    let directory = TemporaryDirectory(prefix: "bugsink")
    let port = PostgresServer.freePort()
    private(set) var dsn = ""
    private var server: Tool.Running?

    static var script: String {
        var root = URL(fileURLWithPath: #filePath)
        for _ in 0..<4 { root.deleteLastPathComponent() }
        return root.appendingPathComponent("scripts/bugsink-peer.py").path
    }

    static func start() async throws -> BugsinkPeer {
        let peer = BugsinkPeer()
        try FileManager.default.createDirectory(atPath: peer.directory.path, withIntermediateDirectories: true)
        let setup = try await peer.python(["setup", peer.directory.path, String(peer.port)])
        try #require(setup.status == 0, "bugsink setup failed: \(setup.stderr)")
        peer.dsn = setup.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        peer.server = try Tool.Running(
            PythonPeers.python, [script, "serve", peer.directory.path, String(peer.port)], environment: [:])
        // Django's development server answers once it listens.
        let deadline = ContinuousClock.now + .seconds(60)
        while ContinuousClock.now < deadline {
            if let answer = try? await HTTP.request("http://127.0.0.1:\(peer.port)/"), answer.status > 0 {
                return peer
            }
            try await Task.sleep(for: .milliseconds(200))
        }
        peer.stop()
        throw BugsinkProblem(description: "bugsink did not listen on \(peer.port) within 60 s")
    }

    /// Every stored event, oldest first: `issue` (its title), `issue_id`, `issue_events`, `data`.
    func events() async throws -> [[String: Any]] {
        let result = try await python(["events", directory.path])
        try #require(result.status == 0, "bugsink events failed: \(result.stderr)")
        return result.stdout.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
    }

    func stop() {
        server?.kill(SIGKILL)  // Bugsink's runserver ignores SIGTERM
        server = nil
        directory.remove()
    }

    private func python(_ arguments: [String]) async throws -> Tool.Result {
        try #require(
            FileManager.default.isExecutableFile(atPath: PythonPeers.python),
            "no Python venv with the pinned peers at \(PythonPeers.python): run `make python-peers`")
        return try await Tool.Running(PythonPeers.python, [Self.script] + arguments, environment: [:]).wait()
    }

    struct BugsinkProblem: Error, CustomStringConvertible {
        var description: String
    }
}
