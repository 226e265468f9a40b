import BlackboxFormat
import BlackboxSentry
import Foundation
import Testing

/// The lenient reader against the shapes SDKs send that the model does not write: every shape the
/// protocol allows is read, a field of another shape is left out, and what is read is bounded.
@Suite("Sentry protocol: an SDK's event read leniently into the typed model")
struct SentryEventLenientTests {
    static func read(_ text: String, limits: SentryEvent.Limits = .init()) throws -> SentryEvent {
        SentryEvent(lenient: try SentryJSON.parse(Data(text.utf8)), limits: limits)
    }

    @Test("the protocol's other shapes: logentry, RFC 3339 times, tag pairs, numeric addresses and ids")
    func otherShapes() throws {
        let event = try Self.read(
            #"""
            {"event_id":"9ec79c33ec9942ab8353589fcb2e04dc","timestamp":"2026-11-26T09:00:00.5Z",
             "logentry":{"message":"cart %s","formatted":"cart 7"},"tags":[["tenant","acme"],["n",3],["bad"]],
             "exception":{"values":[{"type":"ValueError","thread_id":"17","mechanism":{"handled":false}}]},
             "threads":{"values":[{"id":16},{"id":17,"name":"worker","stacktrace":{"frames":[{"function":"f"}]}}]},
             "debug_meta":{"images":[{"image_addr":4194304,"image_size":"0x1000","code_file":"/srv/shop"},{"image_size":1}]},
             "breadcrumbs":[{"timestamp":1795000000.25,"message":"hi","data":{"k":1}}],
             "user":{"id":42},"fingerprint":["{{ default }}",7]}
            """#)
        let time = try Date(
            "2026-11-26T09:00:00.5Z", strategy: Date.ISO8601FormatStyle(includingFractionalSeconds: true))
        #expect(event.timestamp == time.timeIntervalSince1970)
        #expect(event.message?.formatted == "cart 7" && event.message?.message == "cart %s")
        #expect(event.tags == ["tenant": "acme", "n": "3"])
        let exception = try #require(event.exception?.values.first)
        #expect(exception.threadID == 17 && exception.mechanism?.type == nil)
        #expect(exception.mechanism?.handled == false && exception.mechanism?.meta == nil)
        #expect(event.threads?.values.map(\.id) == [16, 17])
        #expect(SentryEvent.failingThreadIndex(of: event.threads?.values ?? [], exceptionThreadID: 17) == 1)
        let images = try #require(event.debugMeta?.images)
        #expect(images.count == 1, "an image without an address is left out")
        #expect(images.first?.imageAddr == "0x400000" && images.first?.imageSize == 0x1000 && images.first?.type == nil)
        #expect(event.breadcrumbs?.values.first?.data == ["k": .number(1)])
        #expect(event.user?.id == "42" && event.fingerprint == ["{{ default }}", "7"])

        let report = CrashReport(sentryEvent: event, receivedAt: Date(timeIntervalSince1970: 1_795_000_000))
        #expect(report.id.uuidString == "9EC79C33-EC99-42AB-8353-589FCB2E04DC")
        #expect(report.thread.id == 17 && report.thread.name == "worker", "the exception's thread is the failing one")
        #expect(report.frames.map { $0.symbols.first?.function } == ["f"], "its stack stands in for the exception's")
        #expect(report.reason == "ValueError" && report.metadata["sentry.handled"] == "false")
        #expect(report.metadata["sentry.mechanism"] == nil, "a mechanism without a type names none")
        #expect(report.metadata[SentryEvent.fingerprintKey] == "{{ default }}\u{1F}7")
        #expect(report.annotations == ["tenant": "acme", "n": "3"])
    }

    @Test("fields of another shape are left out, never an error")
    func wrongShapes() throws {
        let event = try Self.read(
            #"""
            {"event_id":7,"timestamp":"yesterday","level":5,"message":[1],"exception":"boom","threads":3,
             "stacktrace":[],"debug_meta":{"images":"none"},"breadcrumbs":{"values":7},"contexts":{"os":"Linux"},
             "tags":"x","extra":[1],"request":"GET /","user":"me","fingerprint":{"a":1},"sdk":{"version":"1"},
             "platform":{"name":"python"}}
            """#)
        #expect(event.eventID == nil && event.timestamp == nil && event.level == nil && event.message == nil)
        #expect(event.exception?.values == [] && event.threads?.values == [] && event.stacktrace == nil)
        #expect(event.debugMeta?.images == [] && event.breadcrumbs?.values == [] && event.contexts == [:])
        #expect(event.tags == [:] && event.extra == nil && event.user == nil && event.fingerprint == nil)
        #expect(event.sdk == nil && event.platform == nil)
        #expect(event.request != nil && event.request?.method == nil && event.request?.url == nil)
        let report = CrashReport(sentryEvent: event, receivedAt: Date(timeIntervalSince1970: 1_795_000_000))
        #expect(report.kind == .error && report.frames.isEmpty && report.app.name == "unknown")
    }

    @Test("frames that say nothing are left out; a deep stack keeps its innermost frames and says how many went")
    func framesAreBounded() throws {
        let frames = (0..<300).map { #"{"function":"f\#($0)"},{}"# }.joined(separator: ",")
        var limits = SentryEvent.Limits()
        limits.frames = 100
        let event = try Self.read(#"{"exception":[{"type":"E","stacktrace":{"frames":[\#(frames)]}}]}"#, limits: limits)
        let stack = try #require(event.exception?.values.first?.stacktrace)
        #expect(
            stack.frames.count == 100 && stack.frames.last?.function == "f299" && stack.frames.first?.function == "f200"
        )
        #expect(stack.framesOmitted == [0, 400], "the 200 older frames and the 200 empty ones between them")
        let report = CrashReport(sentryEvent: event, receivedAt: Date(), limits: limits)
        #expect(report.frames.count == 100 && report.frames.first?.symbols.first?.function == "f299")
        #expect(report.omittedFrames == .init(omittedAfterIndex: 99, count: 400))
    }

    @Test("threads' stacks are bounded each and together; the failing thread's is read to the stack's bound")
    func threadsAreBounded() throws {
        let stack = (0..<300).map { #"{"instruction_addr":"0x\#(String(4096 + $0, radix: 16))"}"# }.joined(
            separator: ",")
        let threads = (0..<40).map { #"{"id":\#($0),"crashed":\#($0 == 39),"stacktrace":{"frames":[\#(stack)]}}"# }
        var limits = SentryEvent.Limits()
        limits.threads = 32
        limits.threadFrames = 50
        limits.allThreadFrames = 1_000
        let event = try Self.read(#"{"threads":[\#(threads.joined(separator: ","))]}"#, limits: limits)
        let read = try #require(event.threads?.values)
        #expect(read.count == 32, "a thread past the bound is not read")
        #expect(read.map { $0.stacktrace?.frames.count ?? 0 }.reduce(0, +) == 1_000)
        #expect(read.prefix(20).allSatisfy { $0.stacktrace?.frames.count == 50 } && read[20].stacktrace?.frames == [])

        let crashedEarly = (0..<3).map { #"{"id":\#($0),"crashed":\#($0 == 1),"stacktrace":{"frames":[\#(stack)]}}"# }
        let failing = try Self.read(#"{"threads":[\#(crashedEarly.joined(separator: ","))]}"#, limits: limits)
        #expect(failing.threads?.values.map { $0.stacktrace?.frames.count } == [50, 300, 50])
        let report = CrashReport(sentryEvent: failing, receivedAt: Date(), limits: limits)
        #expect(report.frames.count == 300 && report.thread.id == 1)
        #expect(report.threads?.map(\.frames.count) == [50, 50, 50], "as another thread it counts as one")
    }
}
