import BlackboxTestSupport
import CollectorTestSupport
import Foundation
import Testing

private let systemdAnalyze = "/usr/bin/systemd-analyze"

/// The systemd unit in collector/deploy/ is what an operator installs: systemd itself must accept
/// every line of it (`systemd-analyze verify` warns and still exits 0 on a key it cannot parse, so
/// its output must be empty), and its sandbox must stay tight (`systemd-analyze security`'s exposure,
/// 1.3 "OK" when written; 10 is a unit with no hardening).
@Suite("The systemd unit", .enabled(if: FileManager.default.isExecutableFile(atPath: systemdAnalyze)))
struct DeployUnitTests {
    static let analyze = systemdAnalyze
    static let unit = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("deploy/blackbox-collector.service").path

    /// The unit with ExecStart naming the collector this test run built (verify checks that it exists).
    func installedCopy() throws -> (TemporaryDirectory, String) {
        let directory = TemporaryDirectory(prefix: "unit")
        let text = try String(contentsOfFile: Self.unit, encoding: .utf8)
        #expect(text.contains("ExecStart=/usr/local/bin/blackbox-collector serve"))
        let copy = text.replacingOccurrences(
            of: "ExecStart=/usr/local/bin/blackbox-collector", with: "ExecStart=\(CollectorProcess.executable)")
        let path = "\(directory.path)/blackbox-collector.service"
        try copy.write(toFile: path, atomically: true, encoding: .utf8)
        return (directory, path)
    }

    @Test("systemd-analyze verify accepts every line")
    func verifies() async throws {
        let (directory, path) = try installedCopy()
        let result = try await Tool.Running(Self.analyze, ["verify", path], environment: [:]).wait()
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.isEmpty && result.stdout.isEmpty, "\(result.stdout)\(result.stderr)")
        _ = directory
    }

    @Test("the sandbox: DynamicUser, its state directory only, no capabilities; exposure at most 2.0")
    func sandboxed() async throws {
        let (directory, path) = try installedCopy()
        let text = try String(contentsOfFile: path, encoding: .utf8)
        for line in [
            "DynamicUser=yes", "StateDirectory=blackbox-collector", "ProtectSystem=strict", "NoNewPrivileges=yes",
            "CapabilityBoundingSet=", "Restart=on-failure", "Environment=BLACKBOX_COLLECTOR_DATA=%S/blackbox-collector",
        ] {
            #expect(text.split(separator: "\n").contains { $0 == line }, "\(line)")
        }
        let result = try await Tool.Running(
            Self.analyze, ["security", "--offline=yes", "--no-pager", path], environment: [:]
        ).wait()
        let output = result.stdout + result.stderr
        let exposure = output.split(separator: "\n").first { $0.contains("Overall exposure level") }
            .flatMap { line in line.split(separator: " ").compactMap { Double($0) }.first }
        #expect(exposure != nil, "\(output.suffix(2000))")
        #expect((exposure ?? 10) <= 2.0, "\(output.suffix(3000))")
        _ = directory
    }
}
