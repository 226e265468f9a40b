import Logging
import Testing

@testable import Blackbox

@Suite("The logger given to a server framework")
struct ApplicationLoggerTests {
    @Test("a command-line level wins, then BLACKBOX_LOG_LEVEL (kept as started), then a valid LOG_LEVEL")
    func levelChoice() {
        #expect(Blackbox.frameworkLevel(commandLine: .debug, environment: ["LOG_LEVEL": "error"]) == .debug)
        #expect(Blackbox.frameworkLevel(commandLine: nil, environment: ["LOG_LEVEL": "WARNING"]) == .warning)
        #expect(
            Blackbox.frameworkLevel(
                commandLine: nil, environment: ["LOG_LEVEL": "error", "BLACKBOX_LOG_LEVEL": "debug"])
                == nil)
        #expect(Blackbox.frameworkLevel(commandLine: nil, environment: ["LOG_LEVEL": "loud"]) == nil)
        #expect(Blackbox.frameworkLevel(commandLine: nil, environment: [:]) == nil)
    }
    // The running case (Blackbox's default level changed, the logger without one) is checked by
    // scripts/examples-check.sh: an in-process Blackbox here would race ShutdownOrderTests' own.
}
