import BlackboxFormat
import BlackboxTestSupport
import Foundation
import Testing

@testable import Blackbox

/// Crashes right after `Blackbox.start`, with processing at start on (as apps run it): the start-up
/// pass of the crashing process must not take its own report, and a pass that a crash interrupts
/// must not cost the report it was processing.
@Suite("Crashes at start-up")
struct StartupCrashTests {
    /// 50 runs per delay, as the issue asks; `BLACKBOX_STARTUP_CRASH_RUNS` changes it.
    static let runs = ProcessInfo.processInfo.environment["BLACKBOX_STARTUP_CRASH_RUNS"].flatMap(Int.init) ?? 50

    @Test(
        "a crash 0, 1, 5, 20 or 100 ms after start is always reported, never quarantined",
        arguments: [0, 1, 5, 20, 100])
    func crashSoonAfterStart(milliseconds: Int) throws {
        let binDirectory = try #require(Build.release.binDirectory ?? Build.debug.binDirectory)
        let directory = TemporaryDirectory()
        // One directory for every run, as a crash-looping service has: each start finds the earlier
        // runs' reports pending and is processing them when its own crash comes.
        for _ in 0..<Self.runs {
            let result = try runProgram(
                "\(binDirectory)/blackbox-crash-child", [directory.path, "index", "main"],
                environment: [
                    "SWIFT_BACKTRACE": "enable=no", "CRASH_CHILD_PROCESS_AT_START": "1",
                    "CRASH_CHILD_CRASH_AFTER_MS": "\(milliseconds)",
                ])
            #expect(result.signaled, "the child crashed: \(result.stderr)")
        }
        let last = CrashReportProcessor(directory: directory.path).processPending()
        #expect(last.skipped.isEmpty && last.failures.isEmpty, "\(last.skipped) \(last.failures)")
        let layout = DiagnosticsDirectory(directory.path)
        #expect(directoryEntries(layout.quarantine).isEmpty, "quarantined: \(directoryEntries(layout.quarantine))")
        #expect(directoryEntries(layout.pendingCrashes).isEmpty)
        let crashes = try directoryEntries(layout.outbox).filter { $0.hasSuffix(".json") }.compactMap { name in
            try CrashReport.decode(Data(contentsOf: URL(fileURLWithPath: "\(layout.outbox)/\(name)")))
        }.filter { $0.kind == .crash }
        #expect(Set(crashes.map(\.process.pid)).count == Self.runs, "one report for every crash")
        let duplicates = Dictionary(grouping: crashes, by: \.process.pid).filter { $0.value.count > 1 }
        #expect(crashes.count == Self.runs, "twice: \(duplicates.mapValues { $0.map { "\($0.id) \($0.notes)" } })")
    }
}
