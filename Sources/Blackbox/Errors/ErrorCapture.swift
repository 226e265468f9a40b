import BlackboxFormat
import Logging

/// What an error says about itself beyond its type and description, for error reports: a Cocoa-style
/// domain and code and string user info. `DiagnosticError` (BlackboxErrors) conforms; an app's own
/// errors may.
public protocol ReportableError: Error {
    var reportDomain: String { get }
    var reportCode: Int { get }
    var reportUserInfo: [String: String] { get }
    /// Where the error was thrown, when it knows (see `ThrowSite`); nil by default.
    var reportThrowSite: ThrowSite? { get }
}

extension ReportableError {
    public var reportThrowSite: ThrowSite? { nil }
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
        ErrorCapture(error: error, message: message(), file: "\(file)", function: "\(function)", line: line).handle(
            level: level)
    }
}

/// One captured error: the rate limit, the log line and the report. Made by `Blackbox.capture` and
/// by a swift-log call with an `error:` at `.error` or above (`BlackboxLogHandler`), whose own line
/// is the log line.
struct ErrorCapture {
    let error: any Error
    let message: String
    let file: String
    let function: String
    let line: UInt
    /// Where the error was thrown, when the error or the request's scope knows (`ThrowSite`).
    let throwSite: (site: ThrowSite, origin: ThrowSite.Origin)?

    /// `throwSite`: where the caller knows the error was thrown (a log call: `ThrowSiteNotes.noteLogged`);
    /// else the request's scope is asked. The error's own site comes first either way; false
    /// `mayKnowItsSite` says the error is no `ReportableError` (`ErrorTypeFacts`), so it is not asked.
    init(
        error: any Error, message: String, file: String, function: String, line: UInt,
        throwSite known: (site: ThrowSite, origin: ThrowSite.Origin)? = nil, mayKnowItsSite: Bool = true
    ) {
        self.error = error
        self.message = message
        self.file = file
        self.function = function
        self.line = line
        if mayKnowItsSite, let site = (error as? any ReportableError)?.reportThrowSite {
            throwSite = (site, .error)
        } else {
            throwSite = known ?? ScopeBinding.current?.throwSites.site(of: error)
        }
    }

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
        if let throwSite { metadata.merge(throwSite.site.reportMetadata(origin: throwSite.origin)) { _, site in site } }
        return metadata
    }

    /// What the rate limit counts as one call site: the capture's line with the throw site when known,
    /// else with the request's route (a framework integration's one capture line serves every handler).
    /// The type by its identity, not its name: naming a type demangles it.
    private var rateLimitKey: CallSiteKey {
        CallSiteKey(
            file: file, line: line, throwSite: throwSite?.site, route: throwSite == nil ? Blackbox.scope?.route : nil,
            errorType: ObjectIdentifier(type(of: error)))
    }

    /// `Blackbox.capture`: logs the error, and reports it unless a log call of this request reported
    /// its type already (a framework's capture of the error the handler logged and threw on).
    func handle(level: Logger.Level) {
        let again = ScopeBinding.current?.throwSites.wasCaptured(error) == true
        Self.logger.log(
            level: level, "captured error: \(reason)\(again ? " (reported by its log call)" : "")",
            metadata: ["error.type": "\(typeName)"], file: file, function: function, line: line)
        if !again { reportIfDue() }
    }

    /// A log call's capture: its own line is the capture's, its type noted as captured by the caller.
    func handleFromLogCall() {
        reportIfDue()
    }

    private func reportIfDue() {
        let (due, suppressed) = CallSiteLimiter.shared.shouldReport(rateLimitKey)
        guard due, let reporter = AssertionReporter.current else { return }
        reporter.write(
            kind: .error, reason: reason, metadata: metadata, suppressed: suppressed, stack: CapturedStack.capture())
    }
}
