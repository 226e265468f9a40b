import Foundation

#if canImport(Glibc)
    import Glibc
#endif

extension DiagnosticError {
    /// Wraps any error: a `DiagnosticError` stays itself; anything else goes through `NSError`
    /// (domain, code, the standard user-info keys, the underlying error).
    public init(_ error: any Error) {
        if let diagnostic = error as? DiagnosticError {
            self = diagnostic
            return
        }
        let ns = error as NSError
        var info = UserInfo()
        info.underlying = ns.userInfo[NSUnderlyingErrorKey] as? any Error
        info.filePath = ns.userInfo[NSFilePathErrorKey] as? String
        info.url = ns.userInfo[NSURLErrorKey] as? URL
        info.failureReason = ns.userInfo[NSLocalizedFailureReasonErrorKey] as? String
        info.recoverySuggestion = ns.userInfo[NSLocalizedRecoverySuggestionErrorKey] as? String
        if let options = ns.userInfo[NSLocalizedRecoveryOptionsErrorKey] as? [String],
            let recoverable = error as? any RecoverableError
        {
            let box = UncheckedSendable(recoverable)
            info.recovery = Recovery(options: options) { box.value.attemptRecovery(optionIndex: $0) }
        }
        var description = ns.userInfo[NSLocalizedDescriptionKey] as? String
        if description == nil, ns.domain == NSPOSIXErrorDomain, let code = Int32(exactly: ns.code) {
            description = String(cString: strerror(code))
        }
        self.init(
            domain: ns.domain, code: ns.code, developerDescription: description ?? String(describing: error),
            userInfo: info)
        throwSite = nil
    }

    /// A POSIX error (`errno`) with its `strerror` text, e.g. `DiagnosticError.posix(errno, path: path)`.
    public static func posix(
        _ code: Int32, path: String? = nil, fileID: String = #fileID, line: UInt = #line, function: String = #function
    ) -> DiagnosticError {
        DiagnosticError(
            domain: NSPOSIXErrorDomain, code: Int(code), developerDescription: String(cString: strerror(code)),
            userInfo: UserInfo(filePath: path), fileID: fileID, line: line, function: function)
    }

    /// The POSIX code, when this is a POSIX-domain error.
    public var posixCode: POSIXErrorCode? {
        domain == NSPOSIXErrorDomain ? Int32(exactly: code).flatMap(POSIXErrorCode.init(rawValue:)) : nil
    }

    /// An `NSError` with this error's own domain and code (see the type's note on `as NSError`).
    public var nsError: NSError { NSError(domain: domain, code: code, userInfo: nsUserInfo(localized: true)) }

    func nsUserInfo(localized: Bool) -> [String: Any] {
        var info: [String: Any] = [:]
        info[NSLocalizedDescriptionKey] = localized ? errorDescription : developerDescription
        if let reason = localized ? failureReason : userInfo.failureReason {
            info[NSLocalizedFailureReasonErrorKey] = reason
        }
        if let suggestion = localized ? recoverySuggestion : userInfo.recoverySuggestion {
            info[NSLocalizedRecoverySuggestionErrorKey] = suggestion
        }
        if userInfo.recovery != nil {
            info[NSLocalizedRecoveryOptionsErrorKey] = recoveryOptions
            info[NSRecoveryAttempterErrorKey] = RecoveryAttempterObject(self)
        }
        if let underlying = userInfo.underlying {
            info[NSUnderlyingErrorKey] = (underlying as? DiagnosticError)?.nsError ?? (underlying as NSError)
        }
        if let path = userInfo.filePath { info[NSFilePathErrorKey] = path }
        if let url = userInfo.url { info[NSURLErrorKey] = url }
        for (key, value) in userInfo.custom { info[key] = value }
        return info
    }
}

/// The object Cocoa code finds under `NSRecoveryAttempterErrorKey`.
public final class RecoveryAttempterObject: NSObject, Sendable {
    public let error: DiagnosticError
    init(_ error: DiagnosticError) { self.error = error }
    public func attemptRecovery(fromError _: any Error, optionIndex: Int) -> Bool {
        error.attemptRecovery(optionIndex: optionIndex)
    }
}

struct UncheckedSendable<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}
