import BlackboxFormat
import BlackboxTestSupport
import Foundation
import Testing

@testable import BlackboxCollector

/// Issue 31: the same bug crashed by a debug and a release build of the real crash child is one
/// group, titled by what failed and where in the app (signature version 3).
@Suite("One group for one bug across build configurations")
struct BuildConfigurationGroupingTests {
    @Test("four Swift traps, each crashed by the debug and the release build: four groups of two")
    func debugAndReleaseGroupTogether() async throws {
        let release = "\(ProductionSymbolicationTests.releaseBinDirectory)/blackbox-crash-child"
        let debug = "\(Tool.binDirectory)/blackbox-crash-child"
        try #require(FileManager.default.fileExists(atPath: release), "no release crash child")
        let scratch = TemporaryDirectory()
        defer { scratch.remove() }
        let collector = try await TestCollector.start()
        defer { Task { await collector.stop() } }
        let traps = [
            ("index", "Index out of range in blackbox_crash_child.triggerIndexOutOfRange(_:_:)"),
            (
                "nil-unwrap",
                "Unexpectedly found nil while unwrapping an Optional value in blackbox_crash_child.triggerNilUnwrap(_:)"
            ),
            ("overflow", "arithmetic overflow in blackbox_crash_child.triggerOverflow(_:)"),
            ("fatal-error", "crash-child fatal error in blackbox_crash_child.triggerFatalError()"),
        ]
        for (trap, _) in traps {
            for (build, app) in [("debug", debug), ("release", release)] {
                let diagnostics = "\(scratch.path)/\(build)-\(trap)"
                let crashed = try await Tool.Running(app, [diagnostics, trap, "main"], environment: [:]).wait()
                #expect(crashed.signal == SIGTRAP || crashed.signal == SIGILL, "\(build) \(trap): \(crashed.stderr)")
                let next = try await Tool.Running(app, [diagnostics, "process-pending", "next"], environment: [:])
                    .wait()
                #expect(next.status == 0, "\(next.stderr)")
                let uploaded = try await Tool.run(
                    "blackbox", ["upload", diagnostics, "--server", collector.baseURL, "--key", collector.ingestKey])
                #expect(uploaded.status == 0, "\(uploaded.stderr)")
            }
        }
        let groups = try await HTTP.get(collector, "/api/v1/groups").json["items"] as? [[String: Any]] ?? []
        let seen = groups.map { "\($0["title"] as? String ?? "?") ×\($0["count"] as? Int ?? 0)" }.sorted()
        #expect(seen == traps.map { "\($0.1) ×2" }.sorted())
    }
}
