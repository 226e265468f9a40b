import Blackbox
import Foundation

/// An error by domain and code with typed user info, in the spirit of `NSError`: expected failures are
/// thrown as these; programming errors use `ensure`/`bug`/`unreachable` instead.
///
/// Conforms to `CustomNSError`, `LocalizedError` and `RecoverableError`. On Linux, `error as NSError`
/// takes the domain from the *static* `errorDomain` (swift-corelibs-foundation ignores instance
/// domains), so use `nsError` to get an `NSError` with this error's own domain.
public struct DiagnosticError: Error, Sendable, CustomStringConvertible {
    public var domain: String
    public var code: Int
    /// Developer-language text: what logs show, and the display fallback.
    public var developerDescription: String
    public var userInfo: UserInfo
    /// Where the error was made (the initializer's caller): the site error reports are grouped by
    /// (`ThrowSite`). Nil for an error bridged from another type.
    public var throwSite: ThrowSite?

    public struct UserInfo: Sendable {
        public var underlying: (any Error)?
        public var filePath: String?
        public var url: URL?
        /// Developer-language; localized at display time under the key `<code>.reason` when present.
        public var failureReason: String?
        /// Developer-language; localized under `<code>.suggestion`.
        public var recoverySuggestion: String?
        public var recovery: Recovery?
        /// Free-form values, logged with the error (keep secrets out).
        public var custom: [String: String]

        public init(
            underlying: (any Error)? = nil, filePath: String? = nil, url: URL? = nil, failureReason: String? = nil,
            recoverySuggestion: String? = nil, recovery: Recovery? = nil, custom: [String: String] = [:]
        ) {
            self.underlying = underlying
            self.filePath = filePath
            self.url = url
            self.failureReason = failureReason
            self.recoverySuggestion = recoverySuggestion
            self.recovery = recovery
            self.custom = custom
        }
    }

    public init(
        domain: String, code: Int, developerDescription: String, userInfo: UserInfo = UserInfo(),
        fileID: String = #fileID, line: UInt = #line, function: String = #function
    ) {
        self.domain = domain
        self.code = code
        self.developerDescription = developerDescription
        self.userInfo = userInfo
        self.throwSite = ThrowSite(fileID: fileID, line: line, function: function)
    }

    public init<Code: DiagnosticCode>(
        _ code: Code, underlying: (any Error)? = nil, filePath: String? = nil, url: URL? = nil,
        failureReason: String? = nil, recoverySuggestion: String? = nil, recovery: Recovery? = nil,
        custom: [String: String] = [:], fileID: String = #fileID, line: UInt = #line, function: String = #function
    ) {
        self.init(
            domain: Code.domain, code: code.rawValue, developerDescription: code.developerDescription,
            userInfo: UserInfo(
                underlying: underlying, filePath: filePath, url: url, failureReason: failureReason,
                recoverySuggestion: recoverySuggestion, recovery: recovery, custom: custom),
            fileID: fileID, line: line, function: function)
    }

    /// True when this error has `code`'s domain and value: `if error.is(PaymentError.cardDeclined)`.
    public func `is`<Code: DiagnosticCode>(_ code: Code) -> Bool {
        domain == Code.domain && self.code == code.rawValue
    }

    /// The typed code, when this error belongs to `Code`'s domain.
    public func code<Code: DiagnosticCode>(as _: Code.Type) -> Code? {
        domain == Code.domain ? Code(rawValue: code) : nil
    }

    /// `domain#code: developer description`, then the underlying chain.
    public var description: String {
        causeChain.map { "\($0.domain)#\($0.code): \($0.developerDescription)" }.joined(separator: " <- ")
    }

    /// This error and its underlying errors, outermost first (cycles and absurd depths cut at 16).
    public var causeChain: [DiagnosticError] {
        var chain = [self]
        while chain.count < 16, let next = chain.last?.userInfo.underlying {
            chain.append(DiagnosticError(next))
        }
        return chain
    }
}

// MARK: Foundation's error protocols

extension DiagnosticError: CustomNSError {
    public static var errorDomain: String { "Blackbox.DiagnosticError" }
    public var errorCode: Int { code }
    public var errorUserInfo: [String: Any] { nsUserInfo(localized: true) }
}

extension DiagnosticError: LocalizedError {
    public var errorDescription: String? { ErrorLocalization.shared.description(of: self) }
    public var failureReason: String? { ErrorLocalization.shared.failureReason(of: self) }
    public var recoverySuggestion: String? { ErrorLocalization.shared.recoverySuggestion(of: self) }
}

extension DiagnosticError: RecoverableError {
    /// Localized titles; empty when the error carries no recovery.
    public var recoveryOptions: [String] {
        (userInfo.recovery?.options ?? []).map { ErrorLocalization.shared.optionTitle($0, domain: domain) }
    }

    /// Synchronous recovery. An async attempter is run to completion on a task while this thread
    /// waits; prefer `attemptRecovery(optionIndex:) async` from async code.
    public func attemptRecovery(optionIndex: Int) -> Bool {
        guard let recovery = userInfo.recovery, recovery.options.indices.contains(optionIndex) else { return false }
        return recovery.attempter.runBlocking(optionIndex)
    }

    public func attemptRecovery(optionIndex: Int) async -> Bool {
        guard let recovery = userInfo.recovery, recovery.options.indices.contains(optionIndex) else { return false }
        return await recovery.attempter.run(optionIndex)
    }
}
