import BlackboxFormat
import BlackboxTestSupport
import Foundation
import Testing

@testable import Blackbox

/// Crash-time delivery accounts a crashed run as the next launch would, once, and only after the
/// collector stored it.
@Suite("Crashed run checkout")
struct CrashedRunCheckoutTests {
    let directory = TemporaryDirectory()

    var layout: DiagnosticsDirectory { DiagnosticsDirectory(directory.path) }

    func rawReport(pid: Int32, time: Int64) throws -> (path: String, parsed: RawCrashReport) {
        try FileManager.default.createDirectory(atPath: layout.pendingCrashes, withIntermediateDirectories: true)
        let path = "\(layout.pendingCrashes)/crash-\(time)-\(pid)-11.raw"
        let text = "blackbox-raw-crash 2\npid \(pid)\ntime \(time)\nend\n"
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return (path, try RawCrashReport(bytes: Array(text.utf8)))
    }

    @Test("the layout is found from a raw report's path, and only from one in crashes/pending/")
    func layoutFromPath() {
        #expect(
            DiagnosticsDirectory(containingPendingReport: "/var/app/diag/crashes/pending/c.raw")?.root
                == "/var/app/diag")
        #expect(DiagnosticsDirectory(containingPendingReport: "diag/crashes/pending/c.raw")?.root == "diag")
        #expect(DiagnosticsDirectory(containingPendingReport: "crashes/pending/c.raw")?.root == ".")
        #expect(DiagnosticsDirectory(containingPendingReport: "/crashes/pending/c.raw")?.root == "/")
        #expect(DiagnosticsDirectory(containingPendingReport: "/var/app/diag/crashes/quarantine/c.raw") == nil)
        #expect(DiagnosticsDirectory(containingPendingReport: "/tmp/c.raw") == nil)
        #expect(DiagnosticsDirectory(containingPendingReport: "c.raw") == nil)
    }

    @Test(
        "the crashed run is sent as a crashed session with the runs that ended before; after delivery all of it is gone"
    )
    func accountsOnceAfterDelivery() throws {
        let record = RunRecord(pid: 4242, startTime: 1_795_000_000, appName: "app", appVersion: "1.2")
        try record.write(in: layout)
        let earlier = RunRecord(pid: 4000, startTime: 1_794_990_000, appName: "app", appVersion: "1.1")
        earlier.recordEnd(.clean, at: Date(timeIntervalSince1970: 1_794_999_000), in: layout)
        RunRecord.mark(.hung, pid: 4242, in: layout)
        let raw = try rawReport(pid: 4242, time: 1_795_000_100)

        let checkout = try #require(CrashedRunCheckout(rawReport: raw.path, parsed: raw.parsed))
        #expect(checkout.layout == layout)
        #expect(checkout.sessions.map(\.outcome) == [.clean, .crashed])
        #expect(checkout.sessions.last?.appVersion == "1.2")
        #expect(checkout.sessions.last?.endTime == Date(timeIntervalSince1970: 1_795_000_100))
        // Nothing is touched before the delivery is confirmed.
        #expect(RunRecord.all(in: layout).count == 1)
        #expect(EndedSession.pending(in: layout).paths.count == 1)

        checkout.commitDelivered()
        #expect(RunRecord.all(in: layout).isEmpty)
        #expect(EndedSession.pending(in: layout).paths.isEmpty)
        #expect(!FileManager.default.fileExists(atPath: raw.path))
        #expect(!FileManager.default.fileExists(atPath: RunRecord.markerPath(.hung, pid: 4242, in: layout)))
        // The next launch finds nothing left to count for that run.
        #expect(UnseenDeaths(directory: layout).reportAll().isEmpty)
        #expect(EndedSession.pending(in: layout).paths.isEmpty)
    }

    @Test("without the run's record, a crashed marker tells the next launch what happened to the pid")
    func noRecordLeavesMarker() throws {
        try RunRecord(pid: 4000, startTime: 1_794_990_000, appName: "app").write(in: layout)  // another run's
        let raw = try rawReport(pid: 4343, time: 1_795_000_100)
        let checkout = try #require(CrashedRunCheckout(rawReport: raw.path, parsed: raw.parsed))
        #expect(checkout.sessions.isEmpty)
        checkout.commitDelivered()
        #expect(FileManager.default.fileExists(atPath: RunRecord.markerPath(.crashed, pid: 4343, in: layout)))
        #expect(!FileManager.default.fileExists(atPath: raw.path))
    }
}
