import BlackboxFormat
import BlackboxTestSupport
import Foundation
import Testing

@testable import Blackbox

/// Values the app sets while running, carried by every later crash report (issue 19, item 6).
@Suite("Crash-time annotations", .serialized)
struct CrashAnnotationTests {
    @Test("set, changed and removed annotations are in the crash report; one rewritten during the crash is never torn")
    func inTheReport() throws {
        for _ in 0..<5 {
            let directory = TemporaryDirectory()
            let (result, report, _) = try crashAndProcess("annotated", on: "main", build: .debug, directory: directory)
            #expect(result.signaled && result.status == SIGSEGV)
            let annotations = try #require(report?.annotations)
            #expect(annotations["user"] == "alice" && annotations["request-id"] == "r-42")
            #expect(annotations["feature.flag"] == nil, "removed before the crash")
            #expect(annotations["multi"] == "line one line two")
            if let churn = annotations["churn"] {
                let whole = [String(repeating: "a", count: 200), String(repeating: "b", count: 200)]
                #expect(whole.contains(churn), "a torn value: \(churn)")
            }
            #expect(report?.textRendering.contains("  user: alice") == true)
        }
    }

    @Test("keys and values are bounded; a full table refuses more until a key is removed")
    func bounds() {
        defer { for key in CrashAnnotations.current.keys { CrashAnnotations.set(key, nil) } }
        #expect(!CrashAnnotations.set("", "x") && !CrashAnnotations.set("has space", "x"))
        #expect(!CrashAnnotations.set(String(repeating: "k", count: 32), "x"))
        #expect(CrashAnnotations.set(String(repeating: "k", count: 31), "x"))
        // 300 bytes of two-byte characters: cut to 254 bytes, never inside a character.
        #expect(CrashAnnotations.set("long", String(repeating: "é", count: 150)))
        #expect(CrashAnnotations.current["long"] == String(repeating: "é", count: 127))
        var added = CrashAnnotations.current.count
        var index = 0
        while added < CrashAnnotations.maxKeys {
            #expect(CrashAnnotations.set("key-\(index)", "v"))
            index += 1
            added += 1
        }
        #expect(!CrashAnnotations.set("one-too-many", "v"))
        #expect(CrashAnnotations.current["one-too-many"] == nil)
        #expect(CrashAnnotations.set("key-0", nil))
        #expect(CrashAnnotations.set("one-too-many", "v"))
    }
}
