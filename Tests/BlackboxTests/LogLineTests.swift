import BlackboxFormat
import BlackboxTestSupport
import Foundation
import Logging
import Testing

@testable import Blackbox

/// `LogLine` (BlackboxFormat) reads and writes the text form the library's writer (`LineFormatter`)
/// writes: what the collector writes for lines that came as Sentry records must read like the app's
/// own, and what the app's archives hold must read back into the same parts.
@Suite("The log line's text form, read and written outside the writer")
struct LogLineTests {
    @Test("every line the writer writes parses into parts that write back the same line")
    func writerAndLogLineAgree() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        var configuration = testConfiguration(directory)
        configuration.levels = LevelSettings(defaultLevel: .trace)
        let core = try LoggingCore(configuration: configuration)
        defer { core.shutdown() }
        let levels: [Logger.Level] = [.trace, .debug, .info, .notice, .warning, .error, .critical]
        for (index, level) in levels.enumerated() {
            let logger = Logger(label: "shop.db") { BlackboxLogHandler(label: $0, core: core) }
            logger.log(level: level, "slow query", metadata: ["number": "\(index)", "table": "orders"])
        }
        #expect(core.flush())
        let lines = logLines(directory)
        #expect(lines.count == levels.count)
        for line in lines {
            let parsed = try #require(LogLine(parsing: line), "\(line)")
            #expect(parsed.label == "shop.db" && parsed.message.hasPrefix("slow query number="), "\(parsed)")
            #expect(parsed.text == line)
        }
        #expect(
            lines.compactMap { LogLine(parsing: $0)?.level } == [
                "trace", "debug", "info", "note", "warn", "error", "crit",
            ])
    }

    @Test("a line of another shape is no log line; line breaks never make a second one")
    func otherShapes() {
        #expect(LogLine(parsing: #"{"ts":"2026-11-26T09:00:00.100Z","level":"info"}"#) == nil)
        #expect(LogLine(parsing: "2026-11-26T09:00:00.100Z LOUD shop: hi") == nil)
        #expect(LogLine(parsing: "2026-11-26T09:00") == nil)
        let line = LogLine(
            time: Date(timeIntervalSince1970: 1_764_147_600.1), level: "warn", label: "shop",
            message: "one\ntwo\r\nthree")
        #expect(line.text == "2025-11-26T09:00:00.100Z WARN  shop: one two three", "a CR LF is one character")
    }
}
