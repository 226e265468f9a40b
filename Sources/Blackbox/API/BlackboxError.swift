/// Errors Blackbox reports to the app at start-up. At run time the logger never throws or traps; it
/// degrades and says so once on stderr (see `InternalDiagnostics`).
public enum BlackboxError: Error, Equatable, CustomStringConvertible {
    /// Another process holds the journal's lock: two processes must not share one directory.
    case journalLocked(path: String, ownerPID: Int32?)
    case journalUnavailable(path: String, reason: String)
    case directoryUnavailable(path: String, reason: String)
    case invalidConfiguration(String)
    case alreadyStarted

    public var description: String {
        switch self {
        case .journalLocked(let path, let pid):
            let owner = pid.map { "process \($0)" } ?? "another process"
            return
                "Blackbox journal \(path) is in use by \(owner); each process needs its own diagnostics directory"
        case .journalUnavailable(let path, let reason):
            return "Blackbox journal \(path) cannot be used: \(reason)"
        case .directoryUnavailable(let path, let reason):
            return "Blackbox directory \(path) cannot be used: \(reason)"
        case .invalidConfiguration(let reason):
            return "invalid Blackbox configuration: \(reason)"
        case .alreadyStarted:
            return "Blackbox is already started in this process; call shutdown() first"
        }
    }
}
