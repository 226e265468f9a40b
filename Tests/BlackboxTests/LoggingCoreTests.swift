import BlackboxTestSupport
import Foundation
import Logging
import Testing

@_spi(Benchmarks) @testable import Blackbox

@Suite struct LoggingCoreTests {
    let directory = TemporaryDirectory()

    func makeCore(_ configure: (inout BlackboxConfiguration) -> Void = { _ in }) throws -> LoggingCore {
        var configuration = testConfiguration(directory)
        configure(&configuration)
        return try LoggingCore(configuration: configuration)
    }

    func logger(_ label: String, _ core: LoggingCore) -> Logger {
        Logger(label: label) { BlackboxLogHandler(label: $0, core: core) }
    }

    @Test func swiftLogAndFastLinesReachTheFileInOrder() throws {
        let core = try makeCore()
        defer { core.shutdown() }
        let log = logger("app", core)
        let fast = FastLogger(label: "hot", core: core)
        let callLine = #line + 2
        for i in 0..<100 {
            log.info("swift-log \(i)")
            fast.info("fast \(i) ok=\(i % 2 == 0)")
        }
        #expect(core.flush())
        let lines = logLines(directory)
        #expect(lines.count == 200)
        for i in 0..<100 {
            #expect(lines[2 * i].contains("INFO  app: swift-log \(i) ("))
            #expect(lines[2 * i + 1].contains("INFO  hot: fast \(i) ok=\(i % 2 == 0) ("))
        }
        #expect(lines[0].hasSuffix("(BlackboxTests/LoggingCoreTests.swift:\(callLine))"))
    }

    @Test func levelsPerLabelAndAtRunTime() throws {
        let core = try makeCore { $0.levels = LevelSettings(defaultLevel: .warning, labelLevels: ["db": .debug]) }
        defer { core.shutdown() }
        let app = logger("app", core)
        let db = logger("db.pool", core)
        let fast = FastLogger(label: "app.fast", core: core)
        app.info("hidden 1")
        db.debug("shown 1")
        fast.info("hidden 2")
        #expect(!fast.isEnabled(.info))
        core.levels = LevelSettings(defaultLevel: .info)  // existing loggers follow
        app.info("shown 2")
        db.debug("hidden 3")
        fast.info("shown 3")
        var overridden = logger("db.pool", core)
        overridden.logLevel = .trace
        overridden.trace("shown 4")
        core.levels = LevelSettings(defaultLevel: .off)
        app.critical("hidden 4")
        fast.critical("hidden 5")
        core.flush()
        let text = logLines(directory).joined(separator: "\n")
        for n in 1...4 { #expect(text.contains("shown \(n)")) }
        for n in 1...5 { #expect(!text.contains("hidden \(n)")) }
    }

    @Test func metadataMergesAndSensitiveValuesAreRedacted() throws {
        let core = try makeCore()
        defer { core.shutdown() }
        var log = logger("auth", core)
        log[metadataKey: "request"] = "r-1"
        log[metadataKey: "shared"] = "handler"
        log.info(
            "signed in",
            metadata: [
                "shared": "call", "email": .sensitive("a@example.com"),
                "token": "\("s3cret", sensitivity: .sensitive)", "nested": ["inner": .sensitive("pw")],
            ])
        core.flush()
        let line = try #require(logLines(directory).first)
        #expect(line.contains("email=<redacted>"))
        #expect(line.contains("token=<redacted>"))
        #expect(line.contains("nested=\"[inner: <redacted>]\""))
        #expect(line.contains("request=r-1"))
        #expect(line.contains("shared=call"))
        #expect(!line.contains("s3cret") && !line.contains("a@example.com") && !line.contains(": pw"))
        // Secrets must not reach the journal file either.
        let journal = try #require(FileManager.default.contents(atPath: "\(directory.path)/journal"))
        #expect(journal.range(of: Data("s3cret".utf8)) == nil)
    }

    @Test func handlerStaysInlineInSwiftLogsExistential() {
        // Three words: larger and swift-log would box it, and every copy would retain and release.
        #expect(MemoryLayout<BlackboxLogHandler>.size <= 3 * MemoryLayout<Int>.size)
        #expect(MemoryLayout<FastLogger>.size == MemoryLayout<Int>.size)
    }

    @Test func configuredMetadataProviderIsUsed() throws {
        let core = try makeCore { $0.metadataProvider = Logger.MetadataProvider { ["trace": "t-42"] } }
        defer { core.shutdown() }
        logger("traced", core).info("hello", metadata: ["own": "1"])
        core.flush()
        let line = try #require(logLines(directory).first)
        #expect(line.contains("own=1 trace=t-42"))
    }

    @Test("the logger's metadata, then the provider's, then the call's: later sources win, sorted by key")
    func metadataPrecedence() throws {
        let core = try makeCore {
            $0.metadataProvider = Logger.MetadataProvider { ["a": "provider", "c": "provider", "e": "provider"] }
        }
        defer { core.shutdown() }
        var traced = logger("traced", core)
        traced[metadataKey: "a"] = "handler"
        traced[metadataKey: "b"] = "handler"
        traced[metadataKey: "e"] = "handler"
        traced.info("hello", metadata: ["a": "call", "d": "call", "aa": "call"])
        core.flush()
        let line = try #require(logLines(directory).first)
        #expect(line.contains("a=call aa=call b=handler c=provider d=call e=provider"), "\(line)")
    }

    @Test func oddLabelsAndEmptyMessagesAreFine() throws {
        let core = try makeCore()
        defer { core.shutdown() }
        logger("", core).info("")
        FastLogger(label: "", core: core).info("")
        logger(String(repeating: "é", count: 70_000), core).info("long label")
        core.flush()
        let lines = logLines(directory)
        #expect(lines.count == 3)
        let last = lines.last ?? ""
        let keptMessage = last.contains(": long label (")
        let cutLabel = last.contains(" " + String(repeating: "é", count: 128) + ": ")
        #expect(keptMessage && cutLabel, "line of \(last.utf8.count) bytes")
        #expect(!last.contains("\u{FFFD}"))
    }

    @Test func redactionCanBeTurnedOff() throws {
        let core = try makeCore { $0.redactSensitiveValues = false }
        defer { core.shutdown() }
        logger("auth", core).info("x", metadata: ["token": .sensitive("visible")])
        core.flush()
        #expect(logLines(directory).first?.contains("token=visible") == true)
    }

    @Test func jsonLinesFile() throws {
        let core = try makeCore { $0.format = .jsonLines }
        defer { core.shutdown() }
        logger("api", core).error("failed \"quoted\"", metadata: ["code": "500"])
        FastLogger(label: "api", core: core).debug("n=\(5)")
        core.flush()
        let lines = logLines(directory)
        #expect(lines.count == 2)
        let first = try #require(JSONSerialization.jsonObject(with: Data(lines[0].utf8)) as? [String: Any])
        #expect(first["msg"] as? String == "failed \"quoted\"")
        #expect(first["level"] as? String == "error")
        #expect((first["meta"] as? [String: String])?["code"] == "500")
        let second = try #require(JSONSerialization.jsonObject(with: Data(lines[1].utf8)) as? [String: Any])
        #expect(second["msg"] as? String == "n=5")
    }

    @Test func hugeMessageIsTruncatedWithAMarkerNotDropped() throws {
        let core = try makeCore { $0.journalSize = 64 << 10 }
        defer { core.shutdown() }
        logger("big", core).info("\(String(repeating: "y", count: 100_000))")
        logger("big", core).info("after")
        core.flush()
        let lines = logLines(directory)
        #expect(lines.count == 2)
        #expect(lines[0].contains("…[truncated]"))
        #expect(lines[0].count < 64 << 10)
        #expect(lines[1].contains("after"))
    }

    @Test func hugeMetadataIsReplacedByAMarkerAndTheMessageKept() throws {
        let core = try makeCore { $0.journalSize = 64 << 10 }
        defer { core.shutdown() }
        logger("big", core).info("kept", metadata: ["blob": "\(String(repeating: "z", count: 40_000))"])
        core.flush()
        let line = logLines(directory).first ?? ""
        // The message is intact, so it carries no truncation mark; the marker entry tells of the cut.
        let ok = line.contains(": kept blackbox.metadata=\"<cut: too large>\" (") && !line.contains("zzzz")
        #expect(ok, "\(line.prefix(300))")
    }

    @Test func asyncFlushAndRecentLines() async throws {
        let core = try makeCore { $0.recentLineCapacity = 8 }
        defer { core.shutdown() }
        let log = logger("tail", core)
        for i in 0..<20 { log.info("line \(i)") }
        await core.flush()
        #expect(logLines(directory).count == 20)
        let recent = core.recentLines(3)
        #expect(recent.count == 3)
        #expect(recent[0].contains("line 17") && recent[2].contains("line 19"))
    }

    @Test func synchronousLevelReturnsAfterTheLineIsWritten() throws {
        let core = try makeCore { $0.synchronousLevel = .error }
        defer { core.shutdown() }
        logger("sync", core).error("must be on disk when the call returns")
        // No flush: the call itself waited for the writer.
        #expect(logLines(directory).last?.contains("must be on disk") == true)
    }

    @Test func filesArePrivate() throws {
        let core = try makeCore()
        defer { core.shutdown() }
        logger("p", core).info("x")
        core.flush()
        for path in ["\(directory.path)/journal", "\(directory.logs)/test.log"] {
            let attributes = try FileManager.default.attributesOfItem(atPath: path)
            #expect((attributes[.posixPermissions] as? Int) == 0o600, "\(path)")
        }
    }

    @Test func failedStartReleasesTheJournalForARetry() throws {
        // The active log file's path is taken by a directory: start must fail, clearly...
        try FileManager.default.createDirectory(atPath: "\(directory.logs)/test.log", withIntermediateDirectories: true)
        #expect(throws: BlackboxError.self) { try makeCore() }
        // ...and leave nothing held, so that once the path is fixed a retry succeeds.
        try FileManager.default.removeItem(atPath: "\(directory.logs)/test.log")
        let core = try makeCore()
        core.shutdown()
    }

    @Test func shutdownDrainsAndReleasesTheJournal() throws {
        let core = try makeCore()
        let log = logger("stop", core)
        for i in 0..<1000 { log.info("drain \(i)") }
        core.shutdown()
        #expect(logLines(directory).count == 1000)
        let again = try makeCore()  // the lock is free again
        defer { again.shutdown() }
        #expect(again.recovery.records == 0)  // nothing replayed twice
        again.flush()
        #expect(logLines(directory).count == 1000)
    }

    @Test func concurrentWritersKeepPerThreadOrder() async throws {
        let core = try makeCore()
        defer { core.shutdown() }
        let threads = 4
        let perThread = 5000
        await withTaskGroup(of: Void.self) { group in
            for t in 0..<threads {
                group.addTask {
                    let fast = FastLogger(label: "w", core: core)
                    let log = Logger(label: "w") { BlackboxLogHandler(label: $0, core: core) }
                    for n in 0..<perThread {
                        if n % 2 == 0 { fast.info("t=\(t) n=\(n)") } else { log.info("t=\(t) n=\(n)") }
                    }
                }
            }
        }
        core.flush(timeout: .seconds(10))
        var next = [Int](repeating: 0, count: threads)
        for line in logLines(directory) {
            guard let range = line.range(of: "t="), let rest = Optional(line[range.upperBound...]) else { continue }
            let parts = rest.split(separator: " ")
            let t = Int(parts[0])!
            let n = Int(parts[1].dropFirst(2))!
            #expect(n == next[t], "thread \(t) out of order")
            next[t] = n + 1
        }
        #expect(next == [Int](repeating: perThread, count: threads))
    }
}

@Suite struct OverflowTests {
    let directory = TemporaryDirectory()

    /// A core with a 64 KiB journal (about 400 of `fill`'s lines).
    func smallJournalCore(_ overflow: OverflowPolicy) throws -> LoggingCore {
        var configuration = testConfiguration(directory)
        configuration.journalSize = 64 << 10
        configuration.overflow = overflow
        return try LoggingCore(configuration: configuration)
    }

    func fill(_ core: LoggingCore, lines: Int) {
        let fast = FastLogger(label: "flood", core: core)
        for i in 0..<lines { fast.info("flood line \(i) padding padding padding padding padding padding padding") }
    }

    @Test func dropPolicyCountsAndReportsOnceWhenSpaceReturns() throws {
        let core = try smallJournalCore(.drop)
        defer { core.shutdown() }
        core.holdWriter(true)
        fill(core, lines: 2000)  // far more than 64 KiB of records
        core.holdWriter(false)
        #expect(core.flush())  // space returns
        fill(core, lines: 1)
        #expect(core.flush())
        let lines = logLines(directory)
        let written = lines.filter { $0.contains("flood line") }.count
        let notices = lines.filter { $0.contains("blackbox: dropped ") }
        #expect(notices.count == 1)
        let dropped = notices.first.flatMap { $0.components(separatedBy: "dropped ").last?.split(separator: " ").first }
            .flatMap { Int($0) }
        #expect(dropped != nil && dropped! > 1000)
        #expect(written + (dropped ?? 0) == 2001, "every line is written or counted")
        #expect(
            lines.last?.contains("flood line 0 ") == true,
            "the line after the drop is written after the notice: \(lines.suffix(3))")
    }

    @Test func blockPolicyWaitsBoundedThenDrops() throws {
        let core = try smallJournalCore(.block(timeoutMilliseconds: 30))
        defer { core.shutdown() }
        core.holdWriter(true)
        fill(core, lines: 500)  // the ring holds ~400 of these
        let start = ContinuousClock.now
        fill(core, lines: 3)
        let waited = ContinuousClock.now - start
        #expect(waited >= .milliseconds(60), "each of the 3 calls waited for space: \(waited)")
        #expect(waited < .seconds(5))
        core.holdWriter(false)
        #expect(core.flush())
        #expect(logLines(directory).contains { $0.contains("blackbox: dropped ") })
    }

    @Test("a caller waiting for journal space sleeps until the writer gives some back")
    func blockedCallerSleeps() throws {
        let core = try smallJournalCore(.block(timeoutMilliseconds: 300))
        defer { core.shutdown() }
        core.holdWriter(true)
        // Up to the last line that fits, without waiting.
        let journal = core.journal
        var free: UInt64 { journal.capacity - (journal.reservedEnd - journal.releasedPosition) }
        let before = journal.reservedEnd
        fill(core, lines: 1)
        let lineSize = journal.reservedEnd - before
        while free >= lineSize { fill(core, lines: 1) }
        let cpuBefore = currentThreadCPUNanoseconds()
        let start = ContinuousClock.now
        fill(core, lines: 1)
        let waited = ContinuousClock.now - start
        let cpu = currentThreadCPUNanoseconds() - cpuBefore
        #expect(waited >= .milliseconds(300))
        // Polling (`sched_yield`, then `usleep(50)` turns) spent ~3-5 % of the wait on the CPU.
        #expect(cpu < 6_000_000, "\(cpu) ns of CPU in \(waited) of waiting")
        core.holdWriter(false)
        #expect(core.flush())
    }

    @Test func blockPolicyGetsSpaceWhenTheWriterCatchesUp() throws {
        let core = try smallJournalCore(.block(timeoutMilliseconds: 10_000))
        defer { core.shutdown() }
        fill(core, lines: 20_000)  // 30x the ring: only possible by waiting for the writer
        #expect(core.flush())
        let lines = logLines(directory)
        #expect(lines.count == 20_000)
        #expect(!lines.contains { $0.contains("dropped") })
    }
}
