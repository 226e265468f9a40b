import BlackboxTestSupport
import Foundation
import Testing

/// The terminal presenter on a real process's stdin and stdout, as in a shell pipeline.
@Suite("Terminal presenter in a child process")
struct TerminalPresenterProcessTests {
    static var helper: String? {
        ProcessInfo.processInfo.environment["BLACKBOX_TEST_BIN"].map { "\($0)/blackbox-test-child" }
    }

    func run(input: String) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try #require(Self.helper))
        process.arguments = ["present-error", "/tmp"]
        let stdin = Pipe()
        let stdout = Pipe()
        process.standardInput = stdin
        process.standardOutput = stdout
        try process.run()
        stdin.fileHandleForWriting.write(Data(input.utf8))
        try stdin.fileHandleForWriting.close()
        let output = stdout.fileHandleForReading.readDataToEndOfFile()
        let outcome = try process.waitForOutcome()
        #expect(outcome.signal == nil && outcome.status == 0)
        return String(decoding: output, as: UTF8.self)
    }

    @Test("piped answers: an invalid one, then a valid one", .enabled(if: helper != nil))
    func pipedChoice() throws {
        let output = try run(input: "x\n2\n")
        #expect(output.contains("  1) Sign in\n  2) Work offline\n"))
        #expect(output.contains("\"x\" is not one of the choices; enter a number from 1 to 2."))
        #expect(output.hasSuffix("outcome: attempted(optionIndex: 1, recovered: false)\n"))
    }

    @Test("end of input is a clear message and a cancel, never a crash", .enabled(if: helper != nil))
    func endOfInput() throws {
        let output = try run(input: "")
        #expect(output.contains("No choice made (end of input)."))
        #expect(output.hasSuffix("outcome: cancelled\n"))
    }
}
