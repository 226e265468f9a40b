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

    /// The error's own site first (`ReportableError.reportThrowSite`), else the request's scope's.
    init(error: any Error, message: String, file: String, function: String, line: UInt) {
        let scope = ScopeBinding.current
        self.init(
            error: error, message: message, file: file, function: function, line: line,
            throwSite: Self.ownSite(of: error) ?? scope?.throwSites.site(of: error))
    }

    private init(
        error: any Error, message: String, file: String, function: String, line: UInt,
        throwSite: (site: ThrowSite, origin: ThrowSite.Origin)?
    ) {
        self.error = error
        self.message = message
        self.file = file
        self.function = function
        self.line = line
        self.throwSite = throwSite
    }

    private static func ownSite(of error: any Error) -> (site: ThrowSite, origin: ThrowSite.Origin)? {
        (error as? any ReportableError)?.reportThrowSite.map { ($0, .error) }
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
    private static func rateLimitKey(
        file: String, line: UInt, throwSite: ThrowSite?, errorType: ObjectIdentifier, scope: ScopeBinding?
    ) -> CallSiteKey {
        CallSiteKey(
            file: file, line: line, throwSite: throwSite, route: throwSite == nil ? scope?.scope.route : nil,
            errorType: errorType)
    }

    /// `Blackbox.capture`: logs the error, and reports it unless a log call of this request reported
    /// its type already (a framework's capture of the error the handler logged and threw on).
    func handle(level: Logger.Level) {
        let scope = ScopeBinding.current
        let again = scope?.throwSites.wasCaptured(error) == true
        Self.logger.log(
            level: level, "captured error: \(reason)\(again ? " (reported by its log call)" : "")",
            metadata: ["error.type": "\(typeName)"], file: file, function: function, line: line)
        guard !again else { return }
        let key = Self.rateLimitKey(
            file: file, line: line, throwSite: throwSite?.site, errorType: ObjectIdentifier(type(of: error)),
            scope: scope)
        report(CallSiteLimiter.shared.shouldReport(key))
    }

    /// A log call's capture: its own line is the capture's. `noted`: the site the request's scope
    /// holds for the error (`ThrowSiteNotes.noteLogged`: the call's own, or `Blackbox.thrown`'s),
    /// which a `ReportableError`'s own site overrides. The rate limit is asked first, and the capture
    /// made only when a report is due: most calls at a busy site are counted and nothing more (issue
    /// 52's bar is 10 % of the call). `gate`: the site's open gate, whose budget decides
    /// (`CaptureGates`); a site that could have one and has none gets one here. A site's budget is
    /// one whether the call runs in a request's scope or not: the key is the call's line and type
    /// unless another site was noted. `now`: the call's wall-clock time.
    static func reportLogged(
        _ error: any Error, _ errorType: ErrorTypeFacts, message: @autoclosure () -> String, file: String,
        function: String, line: UInt, noted: (site: ThrowSite, origin: ThrowSite.Origin)?,
        gate: Unmanaged<CaptureGate>?, now: UInt64
    ) {
        let throwSite = (errorType.isReportable ? ownSite(of: error) : nil) ?? noted
        let limiter = CallSiteLimiter.shared
        let decision =
            if let gate {
                gate._withUnsafeGuaranteedRef { $0.decide(at: now) }
            } else if !errorType.isReportable && (throwSite?.origin ?? .logged) == .logged && !errorType.gates.isFull {
                limiter.shouldReport(
                    gatingIn: errorType.gates, file: file, line: line, errorType: errorType.type, now: now)
            } else {
                limiter.shouldReport(file: file, line: line, throwSite: throwSite?.site, errorType: errorType.type)
            }
        guard decision.due else { return }
        ErrorCapture(
            error: error, message: message(), file: file, function: function, line: line, throwSite: throwSite
        ).report(decision)
    }

    private func report(_ decision: (due: Bool, suppressed: Int)) {
        guard decision.due, let reporter = AssertionReporter.current else { return }
        reporter.write(
            kind: .error, reason: reason, metadata: metadata, suppressed: decision.suppressed,
            stack: CapturedStack.capture())
    }
}
