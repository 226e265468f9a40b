import BlackboxFormat
import Testing

@testable import BlackboxCollector

@Suite("A report page's headline and frames")
struct ReportPageTests {
    @Test("the headline is the reason without the standard library's file and line, in the app's first frame")
    func headline() {
        var debug = Reports.crash(functions: ["shop.Cart.price(at: Swift.Int) -> Swift.Int", "shop.checkout() -> ()"])
        debug.reason = "Swift/ContiguousArrayBuffer.swift:692: Fatal error: Index out of range"
        #expect(CrashSignature.headline(debug) == "Index out of range in shop.Cart.price(at:)")

        var release = debug
        release.reason = nil
        release.fatalMessage = nil
        release.frames[1].symbols.insert(.init(function: "Swift runtime failure: Index out of range"), at: 0)
        #expect(CrashSignature.headline(release) == "SIGSEGV in shop.Cart.price(at:)", "no reason: the signal")
        release.reason = "Swift runtime failure: Index out of range"
        #expect(CrashSignature.headline(release) == "Index out of range in shop.Cart.price(at:)")
    }

    @Test("frames from packages the app depends on (.build/checkouts), Blackbox and thunks are not the app's own")
    func dependencies() {
        #expect(AppCode.isAppCode("shop.checkout() -> ()", file: "/src/shop/Sources/shop/main.swift"))
        #expect(
            !AppCode.isAppCode(
                "Hummingbird.Router.respond()", file: "/src/shop/.build/checkouts/hummingbird/Sources/Router.swift"))
        // Any build folder: a release build in a folder of its own, a --scratch-path anywhere (the
        // shipped example's Hummingbird frames were counted as the app's from .build-release/).
        #expect(
            !AppCode.isAppCode(
                "Hummingbird.Router.respond()", file: "/src/shop/.build-release/checkouts/hummingbird/Sources/R.swift"))
        #expect(
            !AppCode.isAppCode(
                "Hummingbird.Router.respond()", file: "/tmp/scratch/checkouts/hummingbird/Sources/Hummingbird/R.swift"))
        #expect(AppCode.isAppCode("shop.Checkout.pay() -> ()", file: "/src/shop/Sources/shop/checkouts/Pay.swift"))
        #expect(
            AppCode.checkoutModule("/b/.build-release/checkouts/hummingbird/Sources/HummingbirdCore/S.swift")
                == "HummingbirdCore")
        #expect(!AppCode.isAppCode("partial apply forwarder for closure #1 in shop.main()", file: ""))
        #expect(!AppCode.isAppCode("closure #1 in shop.main()", file: "/<compiler-generated>"))
        #expect(
            !AppCode.isAppCode(
                "(2) await resume partial function for static Blackbox.Blackbox.withScope<A>(_: Blackbox.DiagnosticScope) async -> A",
                file: "/src/blackbox/Sources/Blackbox/Crash/ScopeBinding.swift"))
    }

    @Test(
        "a dependency's module, learned from any frame under .build/checkouts, is not the app's where its own frame has no file"
    )
    func dependencyModules() {
        var report = Reports.crash(functions: [
            "shop.Cart.price(at: Swift.Int) -> Swift.Int",
            "(1) await resume partial function for closure #1 () async -> () in closure #1 in HummingbirdCore.Server.run()",
            "(1) await resume partial function for closure #1 () async throws -> A in static Blackbox.Blackbox.handleRequest<A>(in: Blackbox.DiagnosticScope) async throws -> A",
        ])
        report.frames[2].symbols[0].file = "Deprecations.swift.o"
        #expect(
            AppCode(report).isApp(report.frames[2].symbols[0], of: report.frames[2]), "nothing says it is Hummingbird's"
        )
        #expect(!AppCode(report).isApp(report.frames[3].symbols[0], of: report.frames[3]), "Blackbox's, by its name")
        report.frames[1].symbols.append(
            .init(
                function: "HummingbirdCore.Server.serve() -> ()",
                file: "/src/shop/.build/checkouts/hummingbird/Sources/HummingbirdCore/Server/Server.swift",
                inlined: true))
        let appCode = AppCode(report)
        #expect(appCode.dependencyModules == ["HummingbirdCore"])
        #expect(!appCode.isApp(report.frames[2].symbols[0], of: report.frames[2]))
        #expect(appCode.isApp(report.frames[1].symbols[0], of: report.frames[1]))
        #expect(AppCode.definingModule(of: "closure #2 in static shop.Cart.total() -> Swift.Int") == "shop")
    }

    @Test("symbolication here: waiting for missing debug files only while a frame is still unnamed")
    func missingDebugFiles() throws {
        let missing = try #require(ReportSymbolication(column: "missing", attempts: 0, failure: nil))
        var report = Reports.crash(functions: ["shop.checkout() -> ()"])
        report.frames = report.frames.map { frame in
            var frame = frame
            frame.imageIndex = 0
            return frame
        }
        // Every frame named (from the image's symbol table, say): nothing to wait for.
        #expect(ReportPage.describe(missing, report: report) == "done")
        report.frames.append(CrashReport.Frame(index: report.frames.count, address: "0x5555", imageIndex: 0))
        #expect(ReportPage.describe(missing, report: report).contains("waiting for the missing ones"))
    }
}
