import BlackboxFormat
import Foundation
import Testing

@testable import BlackboxCollector

@Suite("Crash signature")
struct CrashSignatureTests {
    @Test("verbose specialization markers are removed, however deeply their brackets nest")
    func specializationMarkers() {
        #expect(
            CrashSignature.normalizeFunction(
                "generic specialization <Swift.Int> of Swift.Array._checkSubscript(_: Swift.Int) -> ()")
                == "Swift.Array._checkSubscript(…)")
        #expect(
            CrashSignature.normalizeFunction(
                "function signature specialization <Arg[0] = Dead> of generic specialization <Swift.Array<Swift.Dictionary<Swift.String, Swift.Int>>> of shop.total(Swift.Int) -> Swift.Int"
            ) == "shop.total(…)")
        #expect(CrashSignature.normalizeFunction("shop.Cart.add(item: Swift.String) -> ()") == "shop.Cart.add(…)")
        #expect(CrashSignature.normalizeFunction("generic specialization <") == "")
    }

    @Test("a standard-library function inlined into the app (as debug info names it) does not title the group")
    func inlinedStandardLibrary() {
        var report = Reports.crash(functions: [
            "shop.triggerIndexOutOfRange(Swift.Array<Swift.Int>, Swift.Int) -> Swift.Int"
        ])
        report.frames[1].symbols.insert(
            CrashReport.Symbol(
                function:
                    "generic specialization <Swift.Int> of Swift.Array._checkSubscript(_: Swift.Int, wasNativeTypeChecked: Swift.Bool) -> Swift._DependenceToken",
                file: "/build/swift/stdlib/public/core/Array.swift", line: 417, inlined: true),
            at: 0)
        #expect(CrashSignature.compute(report).title == "SIGSEGV in shop.triggerIndexOutOfRange(…)")
    }

    @Test("termination reports group by cause, whatever the counters' values")
    func terminations() {
        func termination(_ reason: String) -> CrashReport {
            var report = CrashReport(
                kind: .termination, app: .init(name: "shop"),
                host: .init(name: "h", os: "Linux", kernel: "6", architecture: "x86_64"),
                process: .init(pid: 1, crashTime: Date()), thread: .init(id: 1, name: nil))
            report.reason = reason
            return report
        }
        let first = CrashSignature.compute(
            termination("killed by the OOM killer (its memory cgroup's oom_kill counter went from 0 to 1)"))
        let second = CrashSignature.compute(
            termination("killed by the OOM killer (its memory cgroup's oom_kill counter went from 3 to 4)"))
        let unknown = CrashSignature.compute(termination("killed, cause unknown (SIGKILL, an unhandled SIGTERM)"))
        #expect(first.hash == second.hash && first.hash != unknown.hash)
        #expect(first.title.hasPrefix("termination: killed by the OOM killer"), "\(first.title)")
    }
}

@Suite("Signatures of captured errors")
struct ErrorSignatureTests {
    func error(_ type: String, at function: String = "shop.pay(order: Swift.String) async throws -> ()") -> CrashReport
    {
        var report = Reports.crash(functions: [function])
        report.kind = .error
        report.signal = nil
        report.reason = "\(type): declined"
        report.metadata["error.type"] = type
        return report
    }

    @Test("errors group by type and the app's frames, apart from crashes at the same place; titles lead with the type")
    func grouping() {
        let declined = CrashSignature.compute(error("shop.PaymentError"))
        #expect(
            declined.title == "shop.PaymentError in shop.pay(…) async throws -> (…)", "names as crash titles have them")
        #expect(CrashSignature.compute(error("shop.PaymentError")).hash == declined.hash, "the same error again")
        #expect(CrashSignature.compute(error("shop.QuotaError")).hash != declined.hash, "another type")
        #expect(
            CrashSignature.compute(error("shop.PaymentError", at: "shop.refund() -> ()")).hash != declined.hash,
            "another place")
        #expect(
            CrashSignature.compute(Reports.crash(functions: ["shop.pay(order: Swift.String) async throws -> ()"])).hash
                != declined.hash)
    }
}
