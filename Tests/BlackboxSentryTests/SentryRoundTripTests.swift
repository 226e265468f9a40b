import BlackboxFormat
import BlackboxSentry
import Foundation
import Testing

/// The two mappings side by side: a Blackbox report as the app's delivery turns it into a Sentry
/// event (`SentryEvent(report:)`), read back as the collector reads any SDK's event
/// (`SentryEvent(lenient:)`, then `CrashReport(sentryEvent:)`). The event must come back equal; what
/// a report holds must survive the trip; where it cannot (an inlined function is a Sentry frame of
/// its own), the test says what comes back instead.
@Suite("Sentry protocol: a report sent as an event and read back")
struct SentryRoundTripTests {
    static let received = Date(timeIntervalSince1970: 1_795_000_000)

    static func report(kind: CrashReport.Kind) -> CrashReport {
        var report = CrashReport(
            id: UUID(uuidString: "9EC79C33-EC99-42AB-8353-589FCB2E04DC")!, kind: kind,
            app: .init(name: "shop", version: "1.2", build: "45"),
            host: .init(name: "web-3", os: "Ubuntu 24.04", kernel: "6.8.0", architecture: "x86_64"),
            process: .init(pid: 4242, path: "/srv/shop", crashTime: received.addingTimeInterval(-5)),
            thread: .init(id: 4242, name: "main"))
        report.images = [
            .init(path: "/srv/shop", bias: "0x400000", start: "0x400000", end: "0x500000", buildID: "d534f27c99415451"),
            .init(
                path: "/usr/lib/libc.so.6", bias: "0x7f0000000000", start: "0x7f0000000000", end: "0x7f0000100000",
                buildID: nil),
        ]
        report.frames = [
            .init(
                index: 0, address: "0x401234", imageIndex: 0, imageOffset: "0x1234",
                symbols: [.init(function: "shop.price(at:)", file: "/src/Shop.swift", line: 12, column: 5)]),
            .init(
                index: 1, address: "0x402000", imageIndex: 0, imageOffset: "0x2000",
                symbols: [.init(function: "shop.checkout(cart:)", file: "/src/Cart.swift", line: 40)]),
            .init(index: 2, address: "0x7f0000001000", imageIndex: 1, imageOffset: "0x1000"),
        ]
        report.frameSource = "libunwind"
        report.symbolicated = false
        report.reason = "checkout with an empty cart"
        report.logTail = ["2026-11-26T09:00:00.100Z WARN  shop.db: slow query number=3"]
        report.annotations = ["tenant": "acme"]
        report.scope = ["route": "/checkout", "request-id": "req-9", "method": "POST", "trace-id": "4bf92f35"]
        return report
    }

    static func readBack(_ report: CrashReport) throws -> CrashReport {
        let event = try #require(SentryEvent(report: report, release: nil, environment: "production"))
        let json = try SentryJSON.parse(try SentryEnvelope.jsonEncoder().encode(event))
        let read = SentryEvent(lenient: json)
        #expect(read == event, "the lenient reader reads back what the model wrote")
        return CrashReport(sentryEvent: read, receivedAt: received)
    }

    /// Every part of the model the delivery fills: other threads with stacks, registers, a signal,
    /// an OOM kill's counts (numbers in a context), the request, breadcrumbs, extra.
    @Test(
        "an event read back leniently equals the event written, for every kind the delivery sends",
        arguments: [CrashReport.Kind.crash, .nonfatal, .error, .hang, .termination])
    func eventComesBackEqual(kind: CrashReport.Kind) throws {
        var report = Self.report(kind: kind)
        report.signal = .init(number: 11, name: "SIGSEGV", code: 1, codeName: "SEGV_MAPERR", faultAddress: "0x8")
        report.registers = [.init(name: "rip", value: "0x401234"), .init(name: "rsp", value: "0x7ffd0000")]
        report.threads = [
            .init(id: 4242, name: "main", crashed: true, frameSource: "libunwind", problem: nil, frames: report.frames),
            .init(
                id: 4243, name: "worker", crashed: false, frameSource: "libunwind", problem: nil,
                frames: [report.frames[1], report.frames[2]]),
        ]
        report.metadata = ["error.type": "PaymentError", "swift.version": "6.2"]
        report.notes = ["a note"]
        report.scope?["url"] = "https://shop.example/checkout?cart=1"
        if kind == .termination {
            report.termination = .init(
                cause: "oom-killer", lastSeenAlive: Self.received.addingTimeInterval(-9), detectedAt: Self.received,
                cgroupOOMKillsBefore: 2,
                cgroupOOMKillsAfter: 3)
        }
        let event = try #require(SentryEvent(report: report, release: "shop@1.2+45", environment: "production"))
        // The fixture reaches every part it says it does.
        #expect(event.threads?.values.contains { $0.stacktrace?.frames.isEmpty == false } == true)
        #expect(event.exception?.values.first?.stacktrace?.registers?["rip"] == "0x401234")
        #expect(event.debugMeta?.images.count == 2 && event.breadcrumbs?.values.count == 1 && event.request != nil)
        #expect(kind != .termination || event.contexts?["termination"]?["cgroup_oom_kills_after"] == .number(3))
        let written = try SentryEnvelope.jsonEncoder().encode(event)
        #expect(SentryEvent(lenient: try SentryJSON.parse(written)) == event)
        // Foundation's strict decoder reads the same model to the same value.
        #expect(try JSONDecoder().decode(SentryEvent.self, from: written) == event)
    }

    @Test(
        "who, where, when, what failed and the stack come back as they were sent",
        arguments: [
            CrashReport.Kind.nonfatal, .error,
        ])
    func sameStory(kind: CrashReport.Kind) throws {
        let sent = Self.report(kind: kind)
        let back = try Self.readBack(sent)
        #expect(back.id == sent.id && back.kind == sent.kind)
        #expect(back.app == sent.app && back.host.name == sent.host.name)
        #expect(back.process.crashTime == sent.process.crashTime)
        #expect(back.reason?.contains("checkout with an empty cart") == true, "\(back.reason ?? "")")
        #expect(back.images.map(\.path) == sent.images.map(\.path))
        #expect(back.images.map(\.buildID) == sent.images.map(\.buildID))
        #expect(back.frames.map(\.address) == sent.frames.map(\.address))
        #expect(back.frames.map(\.imageIndex) == sent.frames.map(\.imageIndex))
        #expect(back.frames.map(\.imageOffset) == sent.frames.map(\.imageOffset))
        #expect(back.frames.map(\.symbols) == sent.frames.map(\.symbols))
        #expect(back.annotations?["tenant"] == "acme")
        #expect(back.scope == sent.scope, "the request scope, whole")
        #expect(back.logTail.count == 1 && back.logTail[0].contains("shop.db: slow query number=3"), "\(back.logTail)")
    }

    @Test("a crash keeps its signal; an inlined function comes back as a frame of its own at the same address")
    func crashAndInlinedFrames() throws {
        var sent = Self.report(kind: .crash)
        sent.signal = .init(number: 5, name: "SIGTRAP", code: 1, codeName: "TRAP_BRKPT", faultAddress: "0x401234")
        sent.frames[0].symbols = [
            .init(function: "shop.price(at:)", file: "/src/Shop.swift", line: 12, inlined: true),
            .init(function: "shop.total(of:)", file: "/src/Shop.swift", line: 30),
        ]
        let back = try Self.readBack(sent)
        #expect(back.kind == .crash)
        #expect(back.signal?.number == 5 && back.signal?.name == "SIGTRAP" && back.signal?.codeName == "TRAP_BRKPT")
        #expect(back.frames.count == sent.frames.count + 1)
        #expect(back.frames.prefix(2).map(\.address) == ["0x401234", "0x401234"])
        #expect(back.frames.prefix(2).map { $0.symbols.first?.function } == ["shop.price(at:)", "shop.total(of:)"])
    }
}
