/// What the Swift runtime said when a check trapped, read the same way from a release and a debug
/// build of the same code.
///
/// A release build names the failed check only in a `Swift runtime failure: <check>` marker (the
/// symbol of an inlined frame at the trap, which the report's `reason` repeats); a debug build goes
/// through the runtime, which prints `<file>:<line>: Fatal error: <message>` (or `Precondition failed`,
/// `Assertion failed`) into the fatal message. The standard library uses one text for both where it
/// can (`Index out of range`, `Unexpectedly found nil while unwrapping an Optional value`); a
/// `precondition` in the app's code is `precondition failure` in release and `Precondition failed:
/// <message>` in debug, so `check` gives both one name. A `preconditionFailure("…")` cannot be told from
/// a `fatalError("…")` in a debug build: the two builds of it have different checks.
public struct SwiftTrap: Sendable, Equatable {
    /// The runtime's words: `Index out of range`, `crash-child fatal error`; empty for a `fatalError()`
    /// with no message.
    public var message: String
    /// The check that failed, the same in a debug and a release build: the message, or `precondition
    /// failure` / `assertion failure` for the app's own checks (whose messages release builds drop).
    public var check: String
    /// For a title: the message (`Index out of range`), the prefix with it for the app's own checks
    /// (`Precondition failed: the cart is empty`), `Fatal error` for a `fatalError()` with no message.
    public var summary: String

    static let runtimeFailure = "Swift runtime failure: "
    static let prefixes = [
        ("Fatal error", nil), ("Precondition failed", "precondition failure"),
        ("Assertion failed", "assertion failure"),
    ]

    /// The trap a crash report records, or nil when it was no Swift check (a segmentation fault, a
    /// signal sent by another process).
    public init?(_ report: CrashReport) {
        for text in [report.reason, report.fatalMessage].compactMap({ $0 }) {
            let line = String(text.split(separator: "\n", omittingEmptySubsequences: false).first ?? "")
            if line.hasPrefix(Self.runtimeFailure) {
                message = String(line.dropFirst(Self.runtimeFailure.count))
                (check, summary) = (message, message)
                return
            }
            if let (message, check, summary) = Self.runtimeMessage(line) {
                (self.message, self.check, self.summary) = (message, check, summary)
                return
            }
        }
        return nil
    }

    /// `[<file>:<line>: ]<prefix>[: <message>]`, as `_assertionFailure` prints it.
    private static func runtimeMessage(_ line: String) -> (message: String, check: String, summary: String)? {
        for (prefix, check) in prefixes {
            var rest: Substring
            if line.hasPrefix(prefix) {
                rest = line.dropFirst(prefix.count)
            } else if let range = UTF8Search.firstRange(of: ": " + prefix, in: line),
                isFileAndLine(line[..<range.lowerBound])
            {
                rest = line[range.upperBound...]
            } else {
                continue
            }
            guard rest.isEmpty || rest.hasPrefix(": ") else { continue }
            let message = String(rest.dropFirst(min(2, rest.count)))
            let summary = message.isEmpty ? prefix : check == nil ? message : "\(prefix): \(message)"
            return (message, check ?? message, summary)
        }
        return nil
    }

    /// `Swift/ContiguousArrayBuffer.swift:692`.
    private static func isFileAndLine(_ text: Substring) -> Bool {
        guard let colon = text.lastIndex(of: ":") else { return false }
        let line = text[text.index(after: colon)...]
        return !text[..<colon].isEmpty && !line.isEmpty && line.allSatisfy(\.isASCII) && line.allSatisfy(\.isNumber)
    }
}
