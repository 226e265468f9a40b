import BlackboxFormat
import BlackboxTestSupport
import Foundation
import Testing

@testable import Blackbox

/// Every report a living process writes says where it came from in one way (`ReportContext`).
@Suite("Report context")
struct ReportContextTests {
    @Test(
        "a report names the configured app and metadata, this host and executable, this pid, and the annotations set now"
    )
    func describesThisProcess() throws {
        let directory = TemporaryDirectory()
        var configuration = testConfiguration(directory, appName: "ctx-app")
        configuration.appVersion = "3.1"
        configuration.appBuild = "77"
        configuration.crashReporting.metadata = ["region": "eu"]
        let context = ReportContext(configuration)
        #expect(CrashAnnotations.set("ctx-test", "first"))
        defer { _ = CrashAnnotations.set("ctx-test", nil) }
        let time = Date(timeIntervalSince1970: 1_795_000_000)
        let report = context.report(.nonfatal, thread: .init(id: 7, name: "worker"), at: time)
        #expect(report.kind == .nonfatal)
        #expect(report.app == .init(name: "ctx-app", version: "3.1", build: "77"))
        #expect(report.metadata == ["region": "eu"])
        #expect(report.process.pid == getpid())
        #expect(report.process.crashTime == time)
        #expect(report.process.path == (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")))
        #expect(report.process.startTime != nil)
        #expect(report.host.name == ProcessInfo.processInfo.hostName)
        #expect(report.thread == .init(id: 7, name: "worker"))
        #expect(report.annotations?["ctx-test"] == "first")
        // Annotations are read per report, not once with the context.
        #expect(CrashAnnotations.set("ctx-test", "second"))
        #expect(context.report(.nonfatal, thread: .init(id: 7, name: nil)).annotations?["ctx-test"] == "second")
    }
}
