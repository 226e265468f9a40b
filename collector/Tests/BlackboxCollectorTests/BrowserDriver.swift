import BlackboxTestSupport
import CollectorTestSupport
import Foundation

/// A real browser session for web UI tests: Tests/browser/drive.py runs headless Chromium through
/// the DevTools protocol (navigate, fill, click, evaluate, screenshot) and reports every script
/// exception and console error. Screenshots go to `outputDirectory(for:)` for a person to look at.
enum BrowserDriver {
    enum Step {
        case navigate(String)
        case fill(String, String)
        case click(String)
        case evaluate(String)
        case screenshot(String)

        var json: [String: Any] {
            switch self {
            case .navigate(let url): ["navigate": url]
            case .fill(let selector, let value): ["fill": [selector, value]]
            case .click(let selector): ["click": selector]
            case .evaluate(let expression): ["eval": expression]
            case .screenshot(let name): ["screenshot": name]
            }
        }
    }

    struct Run: @unchecked Sendable {
        /// Per step: the page's URL afterwards, and what an `evaluate` step returned.
        var urls: [String]
        var values: [Any?]
        var errors: [String]
        var failed: String?
    }

    /// `collector/.build/test-output/<name>` (ignored by git, kept after the run).
    static func outputDirectory(for name: String) -> String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent(".build/test-output/\(name)").path
    }

    /// Waits for the browser on a thread of its own: waiting on one of the test process's two
    /// cooperative threads, it left the server the browser was reading from (in this process) one
    /// thread or none, and the browser timed out while every test beside it stalled.
    static func run(_ chromium: String, _ steps: [Step], output: String) async throws -> Run {
        let stepsJSON = try JSONSerialization.data(withJSONObject: steps.map(\.json))
        return try await offThePool { try runBlocking(chromium, stepsJSON, output: output) }
    }

    private static func runBlocking(_ chromium: String, _ stepsJSON: Data, output: String) throws -> Run {
        let scratch = TemporaryDirectory(prefix: "browser-steps")
        defer { scratch.remove() }
        let stepsFile = "\(scratch.path)/steps.json"
        try stepsJSON.write(to: URL(fileURLWithPath: stepsFile))
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("browser/drive.py").path
        let (status, data) = try ChildRun.run(
            "/usr/bin/env", ["python3", script, chromium, stepsFile, output], errors: .discarded)
        guard let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else {
            return Run(
                urls: [], values: [], errors: [],
                failed: "the driver printed no result (exit \(status)): \(String(decoding: data, as: UTF8.self))"
            )
        }
        let results = object["steps"] as? [[String: Any]] ?? []
        return Run(
            urls: results.map { $0["url"] as? String ?? "" }, values: results.map { $0["value"] },
            errors: object["errors"] as? [String] ?? [], failed: object["failed"] as? String)
    }
}
