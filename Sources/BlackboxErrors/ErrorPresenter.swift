import Foundation

/// Shows an error to a person and, when it offers recovery options, lets them pick one and runs the
/// attempter (Cocoa's `presentError`, UI-agnostic). A GUI, a web page or a terminal implement it.
public protocol ErrorPresenter: Sendable {
    func present(_ error: any Error) async -> PresentationOutcome
}

public enum PresentationOutcome: Equatable, Sendable {
    /// Shown; there was nothing to choose.
    case acknowledged
    /// The person chose an option and the attempter reported success (true) or failure (false).
    case attempted(optionIndex: Int, recovered: Bool)
    /// No choice was made (end of input, or the presenter was dismissed).
    case cancelled
}

/// Presents errors on a terminal: the message, the reason, the suggestion and numbered options; reads
/// the choice. Works with piped input. An invalid answer gets a clear message and the question again;
/// end of input cancels. Never traps.
public struct TerminalErrorPresenter: ErrorPresenter {
    private let readLine: @Sendable () -> String?
    private let write: @Sendable (String) -> Void
    /// How many invalid answers before giving up (cancelled). Default 5.
    public var maximumAttempts = 5

    /// Default: standard input and standard output.
    public init(
        readLine: @escaping @Sendable () -> String? = { Swift.readLine(strippingNewline: true) },
        write: @escaping @Sendable (String) -> Void = { text in FileHandle.standardOutput.write(Data(text.utf8)) }
    ) {
        self.readLine = readLine
        self.write = write
    }

    public func present(_ error: any Error) async -> PresentationOutcome {
        let diagnostic = DiagnosticError(error)
        var text = "Error: \(diagnostic.errorDescription ?? diagnostic.developerDescription)\n"
        if let reason = diagnostic.failureReason { text += "Reason: \(reason)\n" }
        if let suggestion = diagnostic.recoverySuggestion { text += "Suggestion: \(suggestion)\n" }
        let options = diagnostic.recoveryOptions
        guard !options.isEmpty else {
            write(text)
            return .acknowledged
        }
        for (index, option) in options.enumerated() { text += "  \(index + 1)) \(option)\n" }
        write(text)
        for _ in 0..<maximumAttempts {
            write("Choose 1-\(options.count): ")
            guard let answer = readLine() else {
                write("\nNo choice made (end of input).\n")
                return .cancelled
            }
            let trimmed = answer.trimmingCharacters(in: .whitespaces)
            guard let number = Int(trimmed), (1...options.count).contains(number) else {
                write("\"\(trimmed)\" is not one of the choices; enter a number from 1 to \(options.count).\n")
                continue
            }
            let recovered = await diagnostic.attemptRecovery(optionIndex: number - 1)
            return .attempted(optionIndex: number - 1, recovered: recovered)
        }
        write("No valid choice after \(maximumAttempts) answers.\n")
        return .cancelled
    }
}
