import Synchronization

/// What a log call needs of an error's type, found once per type: its name (naming a type demangles
/// it, ~1 µs) and whether it is a `ReportableError` (asking the runtime costs ~150 ns a call).
struct ErrorTypeFacts: Sendable {
    let name: String
    let isReportable: Bool

    /// Generic error types make a type per argument: past this many the table starts over.
    static let capacity = 1024
    private static let known = Mutex<[ObjectIdentifier: ErrorTypeFacts]>([:])

    static func of(_ error: any Error) -> ErrorTypeFacts {
        let key = ObjectIdentifier(type(of: error))
        if let facts = known.withLock({ $0[key] }) { return facts }
        let facts = ErrorTypeFacts(
            name: String(reflecting: type(of: error)), isReportable: error is any ReportableError)
        known.withLock { known in
            if known.count >= capacity { known.removeAll(keepingCapacity: true) }
            known[key] = facts
        }
        return facts
    }
}
