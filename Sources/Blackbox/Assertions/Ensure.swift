import Logging

#if canImport(Glibc)
    import Glibc
#endif

/// Asserts `condition` and returns it, so the assertion doubles as the conditional:
///
/// ```swift
/// if ensure(user != nil, "checkout without a user") { charge(user!) }
/// ```
///
/// On failure: logs at `level` (critical unless told; file, line, function), then traps if the policy
/// says so (debug builds by default); otherwise writes a non-fatal report (its `metadata["level"]`
/// the same level) with a symbolicated backtrace to the outbox and returns false so the caller takes
/// the safe path. A call site that keeps failing logs and reports at most once per
/// `Assertions.reportInterval`. A lower `level` is for conditions that are worth a report but not an
/// alarm (`ensure(cache.isWarm, "cold cache", level: .warning)`).
@discardableResult
public func ensure(
    _ condition: @autoclosure () -> Bool, _ message: @autoclosure () -> String = "", level: Logger.Level = .critical,
    file: StaticString = #fileID, function: StaticString = #function, line: UInt = #line
) -> Bool {
    if condition() { return true }
    AssertionFailure(kind: .ensure, message: message(), level: level, file: file, function: function, line: line)
        .handle(trap: Assertions.policy.trapsNow)
    return false
}

/// A condition-less assertion: always logs at `level` (and reports), traps where the policy says
/// (debug builds by default). For "this must not happen, but the app can go on".
public func bug(
    _ message: @autoclosure () -> String, level: Logger.Level = .critical, file: StaticString = #fileID,
    function: StaticString = #function, line: UInt = #line
) {
    AssertionFailure(kind: .bug, message: message(), level: level, file: file, function: function, line: line)
        .handle(trap: Assertions.policy.trapsNow)
}

/// For code that must never run (a `default:` case that cannot happen): logs, makes sure a report is
/// written, and traps in every build.
public func unreachable(
    _ message: @autoclosure () -> String = "", file: StaticString = #fileID, function: StaticString = #function,
    line: UInt = #line
) -> Never {
    let failure = AssertionFailure(kind: .unreachable, message: message(), file: file, function: function, line: line)
    failure.handle(trap: true)
    fatalError(failure.summary)  // handle(trap: true) does not return; this satisfies `Never`
}
