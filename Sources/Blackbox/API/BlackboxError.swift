/// Errors Blackbox reports to the app at start-up. At run time the logger never throws or traps; it
/// degrades and says so once on stderr (see `InternalDiagnostics`).
///
/// A struct with a private code (AsyncHTTPClient's `HTTPClientError` pattern), so that a new kind is
/// not a breaking change: compare `kind`, read `path`, `ownerPID` and `underlying` (the failed system
/// call and its errno, when one failed).
public struct BlackboxError: Error, Equatable, Sendable, CustomStringConvertible {
    public struct Kind: Equatable, Sendable, CustomStringConvertible {
        private enum Code: Equatable, Sendable {
            case journalLocked, journalUnavailable, directoryUnavailable, invalidConfiguration, alreadyStarted
        }
        private let code: Code

        /// Another process holds the journal's lock: two processes must not share one directory.
        public static let journalLocked = Kind(code: .journalLocked)
        public static let journalUnavailable = Kind(code: .journalUnavailable)
        public static let directoryUnavailable = Kind(code: .directoryUnavailable)
        public static let invalidConfiguration = Kind(code: .invalidConfiguration)
        public static let alreadyStarted = Kind(code: .alreadyStarted)

        public var description: String { "\(code)" }
    }

    public let kind: Kind
    /// The file or directory concerned, when there is one.
    public let path: String?
    /// The process holding the journal (`journalLocked`), when it could be found.
    public let ownerPID: Int32?
    /// What is wrong, in words.
    public let reason: String
    /// The system call that failed, with its errno, when one did.
    public let underlying: SystemError?

    private init(
        _ kind: Kind, path: String? = nil, ownerPID: Int32? = nil, reason: String, underlying: SystemError? = nil
    ) {
        self.kind = kind
        self.path = path
        self.ownerPID = ownerPID
        self.reason = reason
        self.underlying = underlying
    }

    public static func journalLocked(path: String, ownerPID: Int32?) -> Self {
        let owner = ownerPID.map { "process \($0)" } ?? "another process"
        return Self(
            .journalLocked, path: path, ownerPID: ownerPID,
            reason: "in use by \(owner); raise maxInstances, or give each process its own diagnostics directory")
    }

    public static func journalUnavailable(path: String, reason: String) -> Self {
        Self(.journalUnavailable, path: path, reason: reason)
    }

    /// A system call on the journal failed; `context` says what Blackbox was doing.
    public static func journalUnavailable(path: String, _ failure: SystemError, context: String? = nil) -> Self {
        Self(
            .journalUnavailable, path: path,
            reason: [context, failure.reason].compactMap { $0 }.joined(separator: ": "),
            underlying: failure)
    }

    public static func directoryUnavailable(path: String, reason: String) -> Self {
        Self(.directoryUnavailable, path: path, reason: reason)
    }

    public static func directoryUnavailable(path: String, _ failure: SystemError) -> Self {
        Self(.directoryUnavailable, path: path, reason: failure.reason, underlying: failure)
    }

    public static func invalidConfiguration(_ reason: String) -> Self { Self(.invalidConfiguration, reason: reason) }

    public static let alreadyStarted = Self(
        .alreadyStarted, reason: "Blackbox is already started in this process; call shutdown() first")

    public var description: String {
        switch kind {
        case .journalLocked: "Blackbox journal \(path ?? "") is \(reason)"
        case .journalUnavailable: "Blackbox journal \(path ?? "") cannot be used: \(reason)"
        case .directoryUnavailable: "Blackbox directory \(path ?? "") cannot be used: \(reason)"
        case .invalidConfiguration: "invalid Blackbox configuration: \(reason)"
        default: reason
        }
    }
}
