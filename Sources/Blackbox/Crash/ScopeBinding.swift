import CCrashHandler
import Logging

/// A scope bound to a task: the task-local value that ordinary code reads (assertion reports, captured
/// errors), and the slot in the crash handler's table (Sources/CCrashHandler/scopes.c) under the key of
/// the task that entered it. A child task inherits the task-local value but has a key of its own, so a
/// crash in a child task that entered no scope names none rather than a wrong one.
final class ScopeBinding: Sendable {
    @TaskLocal static var current: ScopeBinding?

    let scope: DiagnosticScope
    private let depth: UInt32

    init(_ scope: DiagnosticScope, within outer: ScopeBinding?) {
        var scope = scope.within(outer?.scope)
        if scope.traceID == nil || scope.spanID == nil,
            let provided = Blackbox.core?.configuration.metadataProvider?.get()
        {
            scope.traceID = scope.traceID ?? provided["trace_id"].map { "\($0)" }
            scope.spanID = scope.spanID ?? provided["span_id"].map { "\($0)" }
        }
        self.scope = scope
        self.depth = (outer?.depth ?? 0) + 1
    }

    /// Publishes the scope for the calling task (or thread); the slot to withdraw, -1 when the table
    /// is full (the crash report then names no scope; everything else still sees it).
    func publish() -> Int32 {
        let bytes = scope.tableBytes(limit: Int(BBX_SCOPE_FIELD_BYTES))
        return bytes.withUnsafeBufferPointer { buffer in
            buffer.withMemoryRebound(to: CChar.self) {
                bbx_scope_publish(bbx_scope_current_key(), depth, $0.baseAddress, UInt32($0.count))
            }
        }
    }

    static func withdraw(_ slot: Int32) {
        if slot >= 0 { bbx_scope_withdraw(slot) }
    }
}

extension Blackbox {
    /// The scope of the current task (the innermost `withScope`), inherited by child tasks.
    public static var scope: DiagnosticScope? { ScopeBinding.current?.scope }

    /// Runs `operation` with `scope` bound to the current task: nested scopes add to the outer one,
    /// and reports made from ordinary code (assertions, captured errors) carry it, in child tasks too.
    /// A crash report carries the scope of the task that crashed when that task entered it itself (a
    /// framework middleware does, per request); a crash in a child task that entered none, or on a
    /// thread running no task outside any `withScope`, carries none and says so. At most 1,024 scopes
    /// are published at once; past that a crash names none (ordinary code still sees them).
    public static func withScope<Result>(
        _ scope: DiagnosticScope, isolation: isolated (any Actor)? = #isolation,
        _ operation: () async throws -> Result
    ) async rethrows -> Result {
        let binding = ScopeBinding(scope, within: ScopeBinding.current)
        let slot = binding.publish()
        defer { ScopeBinding.withdraw(slot) }
        return try await ScopeBinding.$current.withValue(binding, operation: operation, isolation: isolation)
    }

    /// `withScope` for synchronous code: outside any task, the scope is published for the calling
    /// thread.
    public static func withScope<Result>(_ scope: DiagnosticScope, _ operation: () throws -> Result) rethrows
        -> Result
    {
        let binding = ScopeBinding(scope, within: ScopeBinding.current)
        let slot = binding.publish()
        defer { ScopeBinding.withdraw(slot) }
        return try ScopeBinding.$current.withValue(binding, operation: operation)
    }
}
