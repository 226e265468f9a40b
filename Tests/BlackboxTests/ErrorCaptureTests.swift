import BlackboxFormat
import BlackboxTestSupport
import Foundation
import Testing

@testable import Blackbox

/// `Blackbox.capture` (issue 33, item 2): error reports with the error's identity, the scope and the
/// capture site's stack, rate limited per call site and error type.
@Suite("Captured errors")
struct ErrorCaptureTests {
    @Test("an error report per call site and type, with domain, code, user info, scope and the capture site")
    func reports() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let result = try runProgram(helperExecutable("blackbox-test-child"), ["capture-errors", directory.path])
        #expect(result.status == 0 && result.stdout.contains("captured"), "\(result.stderr)")
        let names = directoryEntries("\(directory.path)/outbox").filter { $0.hasSuffix(".json") }
        let reports = try names.map { name in
            try CrashReport.decode(
                try #require(FileManager.default.contents(atPath: "\(directory.path)/outbox/\(name)")))
        }
        #expect(reports.count == 2, "three of one type at one site make one report: \(names)")
        #expect(reports.allSatisfy { $0.kind == .error })
        let diagnostic = try #require(reports.first { $0.metadata["error.type"] == "BlackboxErrors.DiagnosticError" })
        #expect(
            diagnostic.reason?.hasPrefix("paying: BlackboxErrors.DiagnosticError: ") == true,
            "\(diagnostic.reason ?? "")")
        #expect(diagnostic.metadata["error.domain"] == "shop.payments" && diagnostic.metadata["error.code"] == "402")
        #expect(diagnostic.metadata["error.userInfo.order"] == "o-17")
        #expect(diagnostic.metadata["error.userInfo.failureReason"] == "the issuer declined")
        #expect(diagnostic.scope == ["route": "/pay", "method": "POST", "request-id": "req-5"])
        let top = diagnostic.frames.first?.symbols.last
        #expect(
            top?.file?.hasSuffix("blackbox-test-child/main.swift") == true,
            "the capture site first, not Blackbox's own frames: \(String(describing: top))")
        let other = try #require(reports.first { $0.metadata["error.type"]?.hasSuffix("QuotaExceeded") == true })
        #expect(other.reason?.contains("QuotaExceeded(tenant: \"t1\")") == true, "\(other.reason ?? "")")
        // This child logs through swift-log's default handler (it bootstraps nothing): stderr.
        let logged = result.stderr.split(separator: "\n").filter { $0.contains("captured error: paying:") }
        #expect(logged.count == 4, "every capture is logged, reported or not: \(result.stderr)")
    }
}
