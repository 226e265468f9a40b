import BlackboxFormat
import Foundation
import Testing

@testable import BlackboxCollector

@Suite("Simplified Swift names on report pages")
struct SwiftNamesTests {
    @Test(
        "full demangled signatures become what Swift's backtracer shows",
        arguments: [
            ("bbapp.priceOfItem(at: Swift.Int) -> Swift.Int", "bbapp.priceOfItem(at:)"),
            (
                "(1) suspend resume partial function for closure #3 @Sendable (HummingbirdCore.Request, Hummingbird.BasicRequestContext) async throws -> Swift.String in hummingbird_service",
                "closure #3 in hummingbird_service"
            ),
            (
                "closure #1 (Swift.UnsafeBufferPointer<Swift.UInt8>) -> () in closure #1 (Swift.UnsafeBufferPointer<Swift.UInt8>) -> () in Swift._assertionFailure(_: Swift.StaticString, _: Swift.StaticString, file: Swift.StaticString, line: Swift.UInt, flags: Swift.UInt32) -> Swift.Never",
                "closure #1 in closure #1 in Swift._assertionFailure(_:_:file:line:flags:)"
            ),
            (
                "(extension in Hummingbird):Hummingbird.RouterMethods.constructResponder<A where A1: Hummingbird.ResponseGenerator>(use: @Sendable (HummingbirdCore.Request, A.Context) async throws -> A1) -> Hummingbird.CallbackResponder<A.Context>",
                "(extension in Hummingbird):Hummingbird.RouterMethods.constructResponder(use:)"
            ),
            (
                "static Blackbox.Blackbox.withScope<A>(_: Blackbox.DiagnosticScope, isolation: isolated Swift.Optional<Swift.Actor>, _: () async throws -> A) async throws -> A",
                "Blackbox.Blackbox.withScope(_:isolation:_:)"
            ),
            (
                "merged generic specialization <Swift.UInt64> of Swift.Array.subscript.getter : (Swift.Int) -> A",
                "Swift.Array.subscript.getter"
            ),
            ("shop.Cart.total() -> Swift.Int", "shop.Cart.total()"),
            (
                "(1) await resume partial function for closure #1 @Sendable (HummingbirdCore.Request, A.Context) async throws -> HummingbirdCore.Response in (extension in Hummingbird):Hummingbird.RouterMethods.constructResponder<A where A1: Hummingbird.ResponseGenerator>(use: @Sendable (HummingbirdCore.Request, A.Context) async throws -> A1) -> Hummingbird.CallbackResponder<A.Context>",
                "closure #1 in (extension in Hummingbird):Hummingbird.RouterMethods.constructResponder(use:)"
            ),
            ("__libc_start_call_main", "__libc_start_call_main"),
            ("main", "main"),
        ])
    func simplified(full: String, short: String) {
        #expect(SwiftNames.simplified(full) == short)
    }
}

/// Security review 2026-11-27, finding 1: names are hostile input (an 8 KB name costs a few hundred
/// bytes in a compressed upload) and are simplified at ingest, for every symbol the culprit search
/// rejects. The work must stay linear in the name: each shape below took ~1.8 s of CPU per 8 KB name
/// (debug) when every `(` split the whole output so far; linear, it takes a few milliseconds. The bound
/// is the thread's own CPU time, so a loaded machine does not fail it.
@Suite("Simplified names: bounded work on hostile names")
struct SwiftNamesBoundsTests {
    static let nameBytes = 8_000
    static let maxCPUSecondsPerName = 0.25

    static func repeated(_ unit: String, prefix: String = "") -> String {
        prefix + String(repeating: unit, count: (nameBytes - prefix.utf8.count) / unit.utf8.count)
    }

    static let hostileNames: [(String, String)] = [
        ("spaced parentheses", repeated(" (", prefix: "Swift.")),
        ("closure signatures", repeated("closure #1 @Sendable () in ")),
        ("getters", repeated(" : (")),
        ("closure numbers", repeated(" #1 (")),
        ("long word then closures", String(repeating: "a", count: 4_000) + repeated(" #1 @Sendable (")),
        ("open generics", repeated("a<", prefix: "Swift.")),
        ("open parameter lists", repeated("a(")),
        ("arrows", repeated("->) (")),
        ("contexts", repeated(" in (extension in X):")),
        ("specializations", repeated("generic specialization <A> of ")),
        ("nested specializations", repeated("generic specialization <", prefix: "x ")),
    ]

    static func threadCPUSeconds() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }

    @Test("an 8 KB name of each hostile shape simplifies within the CPU bound", arguments: hostileNames)
    func boundedSimplification(shape: String, name: String) {
        let start = Self.threadCPUSeconds()
        let simplified = SwiftNames.simplified(name)
        let spent = Self.threadCPUSeconds() - start
        #expect(simplified.utf8.count <= name.utf8.count)
        #expect(spent < Self.maxCPUSecondsPerName, "\(shape): \(spent) s of CPU for \(name.utf8.count) bytes")
    }

    @Test("a report of 2,000 frames of hostile names, none the app's, is grouped within a bounded cost")
    func boundedSignature() {
        // `Swift.` makes every name the standard library's, so the culprit search rejects each one and
        // goes on to the next frame: the shape of the review's 1.3 KB upload.
        let report = Reports.crash(
            functions: (0..<2_000).map { "Swift." + Self.hostileNames[$0 % Self.hostileNames.count].1 })
        let start = Self.threadCPUSeconds()
        let signature = CrashSignature.compute(report)
        let spent = Self.threadCPUSeconds() - start
        #expect(signature.title.hasPrefix("SIGSEGV"), "\(signature.title.prefix(200))")
        // The culprit search reads the top frames only (AppCode.maxCulpritFrames), each name linearly.
        let bound = Double(AppCode.maxCulpritFrames) * Self.maxCPUSecondsPerName / 8
        #expect(spent < bound, "\(spent) s of CPU to group a report of \(report.frames.count) hostile frames")
    }
}
