import Synchronization

/// When a failed assertion (`ensure`, `bug`) traps. `unreachable` traps under every policy: it
/// returns `Never`.
public enum AssertionPolicy: Int, Sendable {
    /// Trap in debug builds; in release builds log, report and go on. The default, in the spirit of
    /// `NSAssert`: programming errors stop the developer, never the customer.
    case trapInDebugOnly
    /// Always trap, e.g. in tests that must not pass with a broken invariant.
    case alwaysTrap
    /// Never trap: log and report only (e.g. to exercise release behaviour in a debug build).
    case neverTrap

    var trapsNow: Bool {
        switch self {
        case .alwaysTrap: true
        case .neverTrap: false
        case .trapInDebugOnly:
            #if DEBUG
                true
            #else
                false
            #endif
        }
    }
}

/// Process-wide settings for `ensure`, `bug` and `unreachable`.
public enum Assertions {
    private static let policyStorage = Atomic<Int>(AssertionPolicy.trapInDebugOnly.rawValue)
    private static let intervalStorage = Atomic<Int64>(60_000)

    /// Default `.trapInDebugOnly`; `BLACKBOX_ASSERTIONS=trap|log` in the environment overrides it at start.
    public static var policy: AssertionPolicy {
        get { AssertionPolicy(rawValue: policyStorage.load(ordering: .relaxed)) ?? .trapInDebugOnly }
        set { policyStorage.store(newValue.rawValue, ordering: .relaxed) }
    }

    /// A call site that keeps failing logs and reports at most once per interval; the failures in
    /// between are counted and mentioned in the next report. Default 60 s.
    public static var reportInterval: Duration {
        get { .milliseconds(intervalStorage.load(ordering: .relaxed)) }
        set {
            let (seconds, attoseconds) = newValue.components
            intervalStorage.store(max(0, seconds * 1000 + attoseconds / 1_000_000_000_000_000), ordering: .relaxed)
        }
    }

    static var reportIntervalNanoseconds: UInt64 { UInt64(intervalStorage.load(ordering: .relaxed)) * 1_000_000 }
}
