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
        #expect(!AppCode.isAppCode("partial apply forwarder for closure #1 in shop.main()", file: ""))
        #expect(!AppCode.isAppCode("closure #1 in shop.main()", file: "/<compiler-generated>"))
        #expect(
            !AppCode.isAppCode(
                "(2) await resume partial function for static Blackbox.Blackbox.withScope<A>(_: Blackbox.DiagnosticScope) async -> A",
                file: "/src/blackbox/Sources/Blackbox/Crash/ScopeBinding.swift"))
    }
}
