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
