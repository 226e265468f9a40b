import Blackbox

/// Error reports (`Blackbox.capture`) carry a diagnostic error's domain, code and what its user info
/// says as text (never the underlying error object, only its description).
extension DiagnosticError: ReportableError {
    public var reportDomain: String { domain }
    public var reportCode: Int { code }
    public var reportUserInfo: [String: String] {
        var info = userInfo.custom
        info["developerDescription"] = developerDescription
        if let path = userInfo.filePath { info["filePath"] = path }
        if let url = userInfo.url { info["url"] = url.absoluteString }
        if let reason = userInfo.failureReason { info["failureReason"] = reason }
        if let suggestion = userInfo.recoverySuggestion { info["recoverySuggestion"] = suggestion }
        if let underlying = userInfo.underlying { info["underlying"] = String(describing: underlying) }
        return info
    }
    public var reportThrowSite: ThrowSite? { throwSite }
}
