import Foundation
import Testing

@testable import BlackboxErrors

/// Feeds the presenter from a real pipe, as a shell would.
final class PipeInput: @unchecked Sendable {
    private let pipe = Pipe()
    private var buffer = Data()
    init(_ text: String, close: Bool = true) {
        pipe.fileHandleForWriting.write(Data(text.utf8))
        if close { try? pipe.fileHandleForWriting.close() }
    }
    func readLine() -> String? {
        while true {
            if let newline = buffer.firstIndex(of: 0x0A) {
                let line = buffer[buffer.startIndex..<newline]
                buffer = Data(buffer[buffer.index(after: newline)...])
                return String(decoding: line, as: UTF8.self)
            }
            let chunk = pipe.fileHandleForReading.availableData
            if chunk.isEmpty {
                guard !buffer.isEmpty else { return nil }
                defer { buffer = Data() }
                return String(decoding: buffer, as: UTF8.self)
            }
            buffer += chunk
        }
    }
}

final class Output: @unchecked Sendable {
    private let lock = NSLock()
    private var text = ""
    func write(_ more: String) { lock.withLock { text += more } }
    var all: String { lock.withLock { text } }
}

@Suite("Terminal presenter")
struct TerminalPresenterTests {
    func recoverable(_ attempts: Output) -> DiagnosticError {
        DiagnosticError(
            PaymentError.gatewayUnreachable, failureReason: "no answer in 30 s",
            recoverySuggestion: "check the network",
            recovery: Recovery(options: ["Retry", "Cancel"]) { index in
                attempts.write("attempt \(index)")
                return index == 0
            })
    }

    func present(_ error: any Error, input: String) async -> (PresentationOutcome, String) {
        let pipe = PipeInput(input)
        let output = Output()
        let presenter = TerminalErrorPresenter(readLine: { pipe.readLine() }, write: { output.write($0) })
        return (await presenter.present(error), output.all)
    }

    @Test("prints the message and numbered options, runs the chosen option")
    func choice() async {
        let attempts = Output()
        let (outcome, text) = await present(recoverable(attempts), input: "1\n")
        #expect(outcome == .attempted(optionIndex: 0, recovered: true))
        #expect(attempts.all == "attempt 0")
        #expect(text.contains("Error: payment gateway timed out") || text.contains("Error: "))
        #expect(text.contains("Reason: no answer in 30 s") && text.contains("Suggestion: check the network"))
        #expect(text.contains("  1) ") && text.contains("  2) ") && text.contains("Choose 1-2: "))
    }

    @Test("an invalid choice gets a clear message and the question again")
    func invalidThenValid() async {
        let attempts = Output()
        let (outcome, text) = await present(recoverable(attempts), input: "seven\n9\n 2 \n")
        #expect(outcome == .attempted(optionIndex: 1, recovered: false))
        #expect(text.contains("\"seven\" is not one of the choices; enter a number from 1 to 2."))
        #expect(text.contains("\"9\" is not one of the choices"))
        #expect(attempts.all == "attempt 1")
    }

    @Test("end of input cancels without calling the attempter")
    func endOfInput() async {
        let attempts = Output()
        let (outcome, text) = await present(recoverable(attempts), input: "")
        #expect(outcome == .cancelled)
        #expect(text.contains("No choice made (end of input)."))
        #expect(attempts.all.isEmpty)
    }

    @Test("an error without options is shown and acknowledged")
    func plainError() async {
        let (outcome, text) = await present(POSIXError(.ENOENT), input: "")
        #expect(outcome == .acknowledged)
        #expect(text.hasPrefix("Error: "))
    }
}
