import BlackboxFormat
import BlackboxTestSupport
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

    @Test("names and messages normalize as the uncompiled patterns did: a group's key is unchanged")
    func compiledPatternsKeepTheKey() {
        // What normalizeFunction and normalizeMessage did before their patterns were compiled once.
        func functionBefore(_ name: String) -> String {
            var result = InAppRules.withoutSpecializationMarkers(name)
            for marker in ["specialized ", "merged ", "static ", "@objc ", "outlined "] {
                result = result.replacingOccurrences(of: marker, with: "")
            }
            for (pattern, replacement) in [
                (#"closure #\d+"#, "closure"), (#"implicit closure #\d+"#, "closure"),
                (#"\(([^()]*?)\)( -> [^ ]+)?"#, "(…)"), (#"0x[0-9a-fA-F]+"#, ""), (#" \+ \d+$"#, ""),
            ] {
                result = result.replacingOccurrences(of: pattern, with: replacement, options: .regularExpression)
            }
            return result.trimmingCharacters(in: .whitespaces)
        }
        func messageBefore(_ message: String) -> String {
            var result = message.split(separator: "\n").first.map(String.init) ?? ""
            for (pattern, replacement) in [(#"0x[0-9a-fA-F]+"#, "0x_"), (#"\d+"#, "N"), (#""[^"]*""#, "\"_\"")] {
                result = result.replacingOccurrences(of: pattern, with: replacement, options: .regularExpression)
            }
            return result
        }
        var random = SplitMix64(seed: 27)
        let seeds =
            SentryCorpus.names.filter { $0.utf8.count < 1_000 } + [
                "implicit closure #12 () -> Swift.String in static shop.A.b(x: Swift.Int) -> Swift.Int + 52",
                "@objc outlined copy of shop.C 0x7f00ab12 + 7",
                "specialized closure #2 (Swift.Int) -> () in app.run(x: Swift.Int) -> ()",
                "Fatal error: Index out of range at 0xdeadbeef, \"key 42\" missing\nsecond line", "$1 \\ & (…) 𝟘𝟙 ٣",
            ]
        for seed in seeds {
            for text in [seed] + (0..<40).map({ _ in SymbolUploadFuzzTests.mutated(seed, &random) }) {
                #expect(CrashSignature.normalizeFunction(text) == functionBefore(text), "\(text)")
                #expect(CrashSignature.normalizeMessage(text) == messageBefore(text), "\(text)")
            }
        }
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
        #expect(CrashSignature.compute(report).title == "SIGSEGV in shop.triggerIndexOutOfRange(_:_:)")
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

@Suite("Signature version 3: one group for the same bug in every build")
struct SignatureVersion3Tests {
    /// The release and debug reports of one trap, as the crash child's real reports have them: the
    /// release build's marker as an inlined frame (and its callers inlined or tail-called away), the
    /// debug build's runtime message with the standard library's file and line.
    static func trap(
        release: String, debug: String, in function: String = "shop.Cart.price(at: Swift.Int) -> Swift.Int"
    ) -> (release: CrashReport, debug: CrashReport) {
        var releaseReport = Reports.crash(functions: [function], signal: (4, "SIGILL"))
        releaseReport.frames[1].symbols.insert(.init(function: "Swift runtime failure: " + release), at: 0)
        releaseReport.reason = "Swift runtime failure: " + release
        var debugReport = Reports.crash(
            functions: [
                "Swift._assertionFailure(_: Swift.StaticString) -> Swift.Never", function, "shop.checkout() -> ()",
            ],
            signal: (5, "SIGTRAP"))
        debugReport.fatalMessage = debug
        debugReport.reason = debug
        return (releaseReport, debugReport)
    }

    @Test("a Swift trap groups and titles alike in a release and a debug build (and on x86 and arm64)")
    func acrossBuilds() {
        let index = Self.trap(
            release: "Index out of range",
            debug: "Swift/ContiguousArrayBuffer.swift:692: Fatal error: Index out of range")
        let (release, debug) = (CrashSignature.compute(index.release), CrashSignature.compute(index.debug))
        #expect(release.hash == debug.hash, "\(release.text) vs \(debug.text)")
        #expect(release.title == "Index out of range in shop.Cart.price(at:)")
        #expect(debug.title == release.title)

        let unwrap = Self.trap(
            release: "Unexpectedly found nil while unwrapping an Optional value",
            debug: "shop/Cart.swift:13: Fatal error: Unexpectedly found nil while unwrapping an Optional value")
        #expect(CrashSignature.compute(unwrap.release).hash == CrashSignature.compute(unwrap.debug).hash)
        #expect(CrashSignature.compute(unwrap.release).hash != release.hash, "another check in the same function")

        let precondition = Self.trap(
            release: "precondition failure", debug: "shop/Cart.swift:20: Precondition failed: the cart is empty")
        #expect(CrashSignature.compute(precondition.release).hash == CrashSignature.compute(precondition.debug).hash)
        #expect(
            CrashSignature.compute(precondition.debug).title
                == "Precondition failed: the cart is empty in shop.Cart.price(at:)")

        let elsewhere = Self.trap(
            release: "Index out of range",
            debug: "Swift/ContiguousArrayBuffer.swift:692: Fatal error: Index out of range",
            in: "shop.Cart.total() -> Swift.Int")
        #expect(CrashSignature.compute(elsewhere.release).hash != release.hash, "the same check in another function")
    }

    @Test("a fatalError's message tells two of them in one function apart, numbers aside")
    func fatalErrors() {
        func fatal(_ message: String) -> CrashReport {
            var report = Reports.crash(functions: ["shop.load() -> ()"], signal: (4, "SIGILL"))
            report.fatalMessage = "shop/Config.swift:9: Fatal error: " + message
            return report
        }
        let first = CrashSignature.compute(fatal("no config at line 12"))
        #expect(first.hash == CrashSignature.compute(fatal("no config at line 40")).hash)
        #expect(first.hash != CrashSignature.compute(fatal("the key is missing")).hash)
        #expect(first.title == "no config at line 12 in shop.load()")
    }

    @Test("without a trap, the signal and the culprit; the callers below it do not split a group")
    func signals() {
        let deep = CrashSignature.compute(
            Reports.crash(functions: ["shop.Cart.price(at: Swift.Int) -> Swift.Int", "shop.checkout() -> ()"]))
        let inlined = CrashSignature.compute(Reports.crash(functions: ["shop.Cart.price(at: Swift.Int) -> Swift.Int"]))
        #expect(deep.hash == inlined.hash)
        #expect(deep.title == "SIGSEGV in shop.Cart.price(at:)")
        let bus = CrashSignature.compute(
            Reports.crash(functions: ["shop.Cart.price(at: Swift.Int) -> Swift.Int"], signal: (7, "SIGBUS")))
        #expect(bus.hash != deep.hash)
    }

    @Test("SwiftTrap reads the runtime's message in each shape it is printed in")
    func trapMessages() {
        func trap(reason: String?, fatal: String? = nil) -> SwiftTrap? {
            var report = Reports.crash(functions: [])
            report.reason = reason
            report.fatalMessage = fatal
            return SwiftTrap(report)
        }
        #expect(trap(reason: "Swift runtime failure: arithmetic overflow")?.check == "arithmetic overflow")
        #expect(trap(reason: nil, fatal: "Fatal error: boom\nmore")?.message == "boom")
        #expect(trap(reason: nil, fatal: "a/b.swift:9: Fatal error")?.message == "")
        #expect(trap(reason: "a/b.swift:9: Assertion failed: x > 0")?.check == "assertion failure")
        #expect(trap(reason: "a/b.swift:9: Assertion failed: x > 0")?.message == "x > 0")
        #expect(trap(reason: "killed by the OOM killer") == nil)
        #expect(trap(reason: "note: Fatal errors are logged") == nil, "not the runtime's shape")
        #expect(trap(reason: "Fatal errors: 3") == nil)
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

    /// Issue 49, item 3: an error captured by the Hummingbird integration's middleware has only
    /// Blackbox's and Hummingbird's frames; it was titled and grouped by the middleware.
    @Test("an error with none of the app's frames groups and is titled by its request's route")
    func groupedByRoute() {
        func captured(route: String, method: String = "POST") -> CrashReport {
            var report = error(
                "hummingbird_service.PaymentError",
                at:
                    "BlackboxHummingbird.BlackboxRequestMiddleware.handle(_: HummingbirdCore.Request) async throws -> ()"
            )
            report.frames.append(
                CrashReport.Frame(
                    index: report.frames.count, address: "0x555500009000", imageIndex: 0, imageOffset: "0x9000",
                    symbols: [
                        .init(
                            function: "Hummingbird.Router.respond(_: HummingbirdCore.Request) async throws -> ()",
                            file: "/src/app/.build/checkouts/hummingbird/Sources/Hummingbird/Router/Router.swift",
                            line: 40)
                    ]
                ))
            report.scope = ["route": route, "method": method, "request-id": UUID().uuidString]
            return report
        }
        let pay = CrashSignature.compute(captured(route: "/pay"))
        #expect(pay.title == "hummingbird_service.PaymentError in POST /pay", "\(pay.title)")
        #expect(CrashSignature.compute(captured(route: "/pay")).hash == pay.hash, "another request, same route")
        #expect(CrashSignature.compute(captured(route: "/refund")).hash != pay.hash, "another handler threw it")
        // The app's own frame, where there is one, still names it.
        var withApp = captured(route: "/pay")
        withApp.frames.insert(
            CrashReport.Frame(
                index: 0, address: "0x555500001000", imageIndex: 0, imageOffset: "0x1000",
                symbols: [.init(function: "hummingbird_service.charge(order: Swift.String) async throws -> ()")]),
            at: 0)
        #expect(
            CrashSignature.compute(withApp).title
                == "hummingbird_service.PaymentError in hummingbird_service.charge(order:)")
    }

    /// Issue 49, item 3: where the app gives the throw site (a `DiagnosticError`'s own, `Blackbox.thrown`,
    /// a log call with `error:`), it groups and titles the error, before the route and the stack.
    @Test("an error with a throw site groups and is titled by it, whatever the route, line or stack")
    func groupedByThrowSite() {
        func thrown(at file: String, line: Int, in function: String, route: String) -> CrashReport {
            var report = error(
                "shop.PaymentError",
                at: "BlackboxHummingbird.BlackboxRequestMiddleware.handle(_: Request) async throws -> ()")
            report.scope = ["route": route, "method": "POST"]
            report.metadata.merge([
                "error.site.file": file, "error.site.line": String(line), "error.site.function": function,
                "error.site.from": "thrown",
            ]) { _, new in new }
            return report
        }
        let charge = CrashSignature.compute(
            thrown(at: "shop/Payments.swift", line: 42, in: "charge(card:)", route: "/pay"))
        #expect(charge.title == "shop.PaymentError in charge(card:) (shop/Payments.swift:42)", "\(charge.title)")
        #expect(charge.text.hasSuffix("site:shop/Payments.swift charge(…)"), "\(charge.text)")
        let elsewhere = thrown(at: "shop/Payments.swift", line: 44, in: "charge(card:)", route: "/checkout")
        #expect(CrashSignature.compute(elsewhere).hash == charge.hash, "the same throw, reached by another route")
        let refund = thrown(at: "shop/Payments.swift", line: 90, in: "refund(order:)", route: "/pay")
        #expect(CrashSignature.compute(refund).hash != charge.hash, "another function threw it")
        var withApp = thrown(at: "shop/Payments.swift", line: 42, in: "charge(card:)", route: "/pay")
        withApp.frames.insert(
            CrashReport.Frame(
                index: 0, address: "0x555500001000", imageIndex: 0, imageOffset: "0x1000",
                symbols: [.init(function: "shop.Checkout.run() async throws -> ()")]),
            at: 0)
        #expect(CrashSignature.compute(withApp).hash == charge.hash, "the site is nearer the cause than the catcher")
        // Top-level code: `#function` is the module's name; the line tells its throws apart.
        let topLevel = CrashSignature.compute(thrown(at: "shop/main.swift", line: 73, in: "shop", route: "/pay"))
        #expect(topLevel.title == "shop.PaymentError at shop/main.swift:73", "\(topLevel.title)")
        let nextRoute = thrown(at: "shop/main.swift", line: 80, in: "shop", route: "/refund")
        #expect(CrashSignature.compute(nextRoute).hash != topLevel.hash, "another top-level throw")
        var crash = thrown(at: "shop/Payments.swift", line: 42, in: "charge(card:)", route: "/pay")
        crash.kind = .nonfatal
        #expect(CrashSignature.compute(crash).title.contains("Payments.swift") == false, "errors only")
        var hostile = thrown(
            at: String(repeating: "a/", count: 5000), line: 1, in: String(repeating: "f(", count: 5000), route: "/")
        hostile.metadata["error.site.line"] = "-1; DROP"
        let bounded = CrashSignature.compute(hostile)
        #expect(bounded.text.utf8.count < 1000 && bounded.title.count <= CrashSignature.maxTitleCharacters + 1)
    }

    @Test("errors group by type and the app's frames, apart from crashes at the same place; titles lead with the type")
    func grouping() {
        let declined = CrashSignature.compute(error("shop.PaymentError"))
        #expect(
            declined.title == "shop.PaymentError in shop.pay(order:)", "names as crash titles have them")
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
