import BlackboxFormat
import Logging

/// What an error says about itself beyond its type and description, for error reports: a Cocoa-style
/// domain and code and string user info. `DiagnosticError` (BlackboxErrors) conforms; an app's own
/// errors may.
public protocol ReportableError: Error {
    var reportDomain: String { get }
    var reportCode: Int { get }
    var reportUserInfo: [String: String] { get }
}

extension Blackbox {
    /// Records `error` as a non-fatal `error` report — its type, description, `ReportableError`
    /// domain/code/user info, the current task's scope (`withScope`) and this call's stack — and logs
    /// it at `level`. At most one report per call site and error type per interval
    /// (`Assertions.reportInterval`); the ones in between are counted in the next. The collector
    /// groups error reports by type and the app's frames, apart from crashes.
    public static func capture(
        _ error: any Error, _ message: @autoclosure () -> String = "", level: Logger.Level = .error,
        file: StaticString = #fileID, function: StaticString = #function, line: UInt = #line
    ) {
        ErrorCapture(error: error, message: message(), file: file, function: function, line: line).handle(
            level: level)
    }
}

/// One captured error: the rate limit, the log line and the report.
struct ErrorCapture {
    let error: any Error
    let message: String
    let file: StaticString
    let function: StaticString
    let line: UInt

    private static let logger = Logger(label: "blackbox.errors")

    var typeName: String { String(reflecting: type(of: error)) }
    var reason: String {
        let description = String(describing: error)
        return (message.isEmpty ? "" : "\(message): ") + "\(typeName): \(description)"
    }

    var metadata: [String: String] {
        var metadata = ["error.type": typeName, "location": "\(file):\(line)"]
        if let reportable = error as? any ReportableError {
            metadata["error.domain"] = reportable.reportDomain
            metadata["error.code"] = String(reportable.reportCode)
            for (key, value) in reportable.reportUserInfo { metadata["error.userInfo.\(key)"] = value }
        }
        return metadata
    }

    func handle(level: Logger.Level) {
        let (due, suppressed) = CallSiteLimiter.shared.shouldReport("\(file):\(line) \(typeName)")
        Self.logger.log(
            level: level, "captured error: \(reason)", metadata: ["error.type": "\(typeName)"], file: "\(file)",
            function: "\(function)", line: line)
        guard due, let reporter = AssertionReporter.current else { return }
        reporter.write(
            kind: .error, reason: reason, metadata: metadata, suppressed: suppressed, stack: CapturedStack.capture())
    }
}
