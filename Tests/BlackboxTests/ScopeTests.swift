import BlackboxFormat
import BlackboxTestSupport
import Foundation
import Testing

@testable import Blackbox

/// Request scopes (issue 33, item 1): a crash names the crashing task's scope and no other's;
/// reports from ordinary code carry the current task's scope, child tasks included.
@Suite("Scopes", .serialized)
struct ScopeTests {
    @Test(
        "64 concurrent scoped requests: the crash report names the crashing request's own (innermost) scope",
        arguments: [Build.debug, .release])
    func crashNamesItsOwnRequest(build: Build) throws {
        for _ in 0..<3 {
            let directory = TemporaryDirectory()
            defer { directory.remove() }
            let (result, report, _) = try crashAndProcess(
                "scoped-requests", on: "main", build: build, directory: directory)
            #expect(result.signaled && result.status == SIGSEGV)
            let scope = try #require(report?.scope, "\(report?.notes ?? [])")
            #expect(scope["request-id"] == "req-37")
            #expect(scope["user-id"] == "user-37", "the nested scope, merged with the request's")
            #expect(scope["method"] == "PUT" && scope["route"] == "/items/:id" && scope["tenant"] == "t1")
            #expect(scope["trace-id"] == "trace-37", "from the metadata provider, as swift-otel's gives it")
            #expect(report?.textRendering.contains("  request-id: req-37") == true)
        }
    }

    @Test(
        "child tasks and unstructured tasks carry their parent's scope to a crash; a detached task none, and says why",
        arguments: [
            ("scoped-child", "req-parent"), ("scoped-unstructured", "req-spawner"), ("scoped-detached", nil),
        ])
    func inheritance(scene: String, requestID: String?) throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let (result, processed, _) = try crashAndProcess(scene, on: "main", build: .debug, directory: directory)
        #expect(result.signaled)
        let report = try #require(processed)
        #expect(report.scope?["request-id"] == requestID, "\(report.scope ?? [:])")
        #expect(
            report.notes.contains { $0.hasPrefix("the crashed thread was in no scope") } == (requestID == nil),
            "\(report.notes)")
    }

    @Test("synchronous code outside any task: the scope is the thread's")
    func threadScope() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let (result, report, _) = try crashAndProcess("scoped-thread", on: "main", build: .debug, directory: directory)
        #expect(result.signaled)
        #expect(report?.scope?["request-id"] == "job-7" && report?.scope?["route"] == "job:reindex")
    }

    @Test("nested scopes add to the outer one; child tasks inherit it; it ends with its closure")
    func taskLocal() async {
        #expect(Blackbox.scope == nil)
        await Blackbox.withScope(DiagnosticScope(route: "/a", requestID: "r1", tags: ["k": "outer"])) {
            await Blackbox.withScope(DiagnosticScope(userID: "u1", tags: ["k": "inner", "x": "y"])) {
                let fields = Blackbox.scope?.fields ?? [:]
                #expect(fields == ["route": "/a", "request-id": "r1", "user-id": "u1", "k": "inner", "x": "y"])
                async let inherited = Blackbox.scope?.requestID
                #expect(await inherited == "r1")
            }
            #expect(Blackbox.scope?.userID == nil)
        }
        #expect(Blackbox.scope == nil)
    }

    @Test("the crash view holds named fields first and never half a field")
    func crashViewBytes() {
        var scope = DiagnosticScope(requestID: "r", tags: ["bad name": "x", "request-id": "tag loses"])
        for index in 0..<20 { scope.tags["tag\(index)"] = String(repeating: "v", count: 60) }
        let bytes = scope.crashViewBytes(limit: 640)
        #expect(bytes.count <= 640)
        let parts = bytes.split(separator: 0, omittingEmptySubsequences: false).dropLast().map {
            String(decoding: $0, as: UTF8.self)
        }
        #expect(parts.count % 2 == 0)
        #expect(Array(parts.prefix(2)) == ["request-id", "r"])
        #expect(!parts.contains("bad name") && !parts.contains("tag loses"))
        #expect(parts.contains("tag0") && !parts.contains("tag19"), "as many tags as fit, in name order")
    }

    /// Security review 2026-11-27: a scope's values come from requests (headers, URLs), and error and
    /// non-fatal reports once copied them as they were.
    @Test("every report kind takes the crash view's rule: valid names, one clean line per value, bounded in all")
    func reportFieldsAreCleaned() {
        let scope = DiagnosticScope(
            route: "/a\r\nforged: line", requestID: "r\u{1B}[2J\u{07}\u{9B}1", userID: "u\0x",
            tags: ["a=b\0c": "dropped", "big": String(repeating: "x", count: 100_000), "ok": "y"])
        let fields = scope.reportScope
        #expect(fields["route"] == "/a forged: line", "CRLF is one character, one space")
        #expect(fields["request-id"] == "r [2J  1")
        #expect(fields["user-id"] == "ux")
        #expect(fields["a=b\0c"] == nil && fields["ok"] == "y")
        #expect(fields["big"]?.utf8.count == CrashAnnotations.maxValueBytes)
        let total = fields.reduce(0) { $0 + $1.key.utf8.count + $1.value.utf8.count + 2 }
        #expect(total <= DiagnosticScope.maxReportBytes)
        // The crash view is the same fields.
        let view = scope.crashViewBytes(limit: DiagnosticScope.maxReportBytes)
        #expect(view.count == total)
    }
}
