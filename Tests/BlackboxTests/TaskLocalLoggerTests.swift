import BlackboxTestSupport
import Foundation
import Logging
import Testing

@testable import Blackbox

/// swift-log 1.16's vocabulary with Blackbox's handler: the task-local logger (SLG-0006: `withLogger`,
/// `Logger.current`) and the `LogEvent` path behind `MultiplexLogHandler`, which crashed on Linux in
/// swift-log 1.12 (apple/swift-log#456, #494), under concurrency.
@Suite("swift-log's task-local logger and MultiplexLogHandler with Blackbox's handler")
struct TaskLocalLoggerTests {
    let directory = TemporaryDirectory()

    /// Every line counts here: a full journal waits for the writer (a loaded CI machine) instead of dropping.
    func core() throws -> LoggingCore {
        var configuration = testConfiguration(directory)
        configuration.journalSize = 1 << 20
        configuration.overflow = .block(timeoutMilliseconds: 60_000)
        return try LoggingCore(configuration: configuration)
    }

    @Test("withLogger binds a Blackbox logger; child tasks read it as Logger.current, merged metadata and levels apply")
    func taskLocalLogger() async throws {
        let core = try core()
        defer { core.shutdown() }
        let logger = Logger(label: "tasks") { BlackboxLogHandler(label: $0, core: core) }
        await withLogger(logger) { _ in
            await withTaskGroup(of: Void.self) { group in
                for request in 0..<8 {
                    group.addTask {
                        withLogger(mergingMetadata: ["request": "r\(request)"]) { _ in
                            Logger.current.info("handled")
                            withLogger(logLevel: .error) { _ in Logger.current.info("below the level") }
                        }
                    }
                }
            }
        }
        #expect(core.flush())
        let lines = logLines(directory)
        for request in 0..<8 {
            #expect(lines.filter { $0.contains("tasks: handled request=r\(request)") }.count == 1, "\(lines)")
        }
        #expect(!lines.contains { $0.contains("below the level") })
    }

    @Test(
        "MultiplexLogHandler over Blackbox's handler and another: 16 tasks x 500 events with errors and metadata, every line once"
    )
    func multiplexUnderConcurrency() async throws {
        let core = try core()
        defer { core.shutdown() }
        struct Failure: Error, CustomStringConvertible { var description: String { "declined" } }
        let logger = Logger(label: "multi") { label in
            MultiplexLogHandler([
                BlackboxLogHandler(label: label, core: core), SwiftLogNoOpLogHandler(label),
            ])
        }
        await withTaskGroup(of: Void.self) { group in
            for task in 0..<16 {
                group.addTask {
                    var local = logger
                    local[metadataKey: "task"] = "\(task)"
                    for n in 0..<500 {
                        local.error("event \(task)-\(n)", error: Failure(), metadata: ["n": "\(n)"])
                    }
                }
            }
        }
        #expect(core.flush(timeout: .seconds(30)))
        let lines = try allLogLines(directory).filter { $0.contains("multi: event ") }
        #expect(lines.count == 16 * 500)
        var events = Set<String>()
        for line in lines {
            guard let range = line.range(of: "multi: event ") else { continue }
            events.insert(String(line[range.upperBound...].prefix { $0 != " " }))
        }
        #expect(events.count == 16 * 500, "each event once")
        #expect(lines.allSatisfy { $0.contains("error=declined") }, "\(lines.first ?? "")")
    }
}
