import Atomics
import CCrashHandler
import Logging
import Synchronization

/// A scope bound to a task: the task-local value that ordinary code reads (assertion reports, captured
/// errors) and that the crash handler finds for the crashed thread's task through the runtime's own
/// lookup (Sources/CCrashHandler/scopes.c). Inherited by child tasks and unstructured `Task {}`s, as
/// every task-local value is; `Task.detached` starts without one.
final class ScopeBinding: Sendable {
    @TaskLocal static var current: ScopeBinding?

    /// Set by the first binding: until a program enters a scope, a log call with an error does not
    /// read the task-local value (~12 ns, a tenth of what issue 52 allows the call).
    /// A value, not a `ManagedAtomic` (a class instance behind a lazy global: a `swift_once` check
    /// and a metadata lookup per call), so the global is laid out statically.
    private static let anyBound = Atomic<Bool>(false)

    /// `current`, not retained, read only once any scope was bound: for code that runs inside the
    /// scope (which outlives it), a log call with an error. Code inside a scope runs after its binding
    /// was made (the task or closure that runs it started after), so it always sees the flag set. Read
    /// through the runtime's lookup the crash handler uses, once that was registered: the task-local
    /// getter copies the value, a retain and a release on an object every call of the request shares.
    static var currentUnretainedIfAnyBound: Unmanaged<ScopeBinding>? {
        guard anyBound.load(ordering: .relaxed) else { return nil }
        guard crashHandlerCanRead else { return current.map { Unmanaged.passUnretained($0) } }
        return bbx_scope_binding_current().map { Unmanaged<ScopeBinding>.fromOpaque($0) }
    }

    /// The address of the fields' immutable C view. The first stored property: the crash handler
    /// reads it right after Swift's heap-object header (checked once, by `crashHandlerCanRead`).
    private let viewAddress: UInt
    let scope: DiagnosticScope
    /// The throw sites noted in this scope: the outer scope's, unless this one begins a request.
    let throwSites: ThrowSiteNotes

    init(_ scope: DiagnosticScope, within outer: ScopeBinding?, beginsRequest: Bool = false) {
        var scope = scope.within(outer?.scope)
        if scope.traceID == nil || scope.spanID == nil,
            let provided = Blackbox.core?.configuration.metadataProvider?.get()
        {
            scope.traceID = scope.traceID ?? provided["trace_id"].map { "\($0)" }
            scope.spanID = scope.spanID ?? provided["span_id"].map { "\($0)" }
        }
        self.scope = scope
        self.throwSites = beginsRequest ? ThrowSiteNotes() : outer?.throwSites ?? ThrowSiteNotes()
        self.viewAddress = Self.makeView(scope.crashViewBytes(limit: Int(BBX_SCOPE_FIELD_BYTES)))
    }

    deinit {
        UnsafeMutableRawPointer(bitPattern: viewAddress)?.deallocate()
    }

    private static func makeView(_ fields: [UInt8]) -> UInt {
        let header = MemoryLayout<bbx_scope_view>.size
        let view = UnsafeMutableRawPointer.allocate(byteCount: header + fields.count, alignment: 8)
        view.storeBytes(of: BBX_SCOPE_VIEW_MAGIC, toByteOffset: 0, as: UInt64.self)
        view.storeBytes(of: UInt32(fields.count), toByteOffset: 8, as: UInt32.self)
        view.storeBytes(of: 0, toByteOffset: 12, as: UInt32.self)
        fields.withUnsafeBytes { (view + header).copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
        return UInt(bitPattern: view)
    }

    /// Registers the task-local key with the crash handler, once, if the object layout is the one the
    /// handler assumes (a future runtime that laid objects out otherwise would leave crash reports
    /// without scopes rather than have the handler read garbage).
    static let crashHandlerCanRead: Bool = {
        let probe = ScopeBinding(DiagnosticScope(), within: nil)
        let stored = withExtendedLifetime(probe) {
            Unmanaged.passUnretained(probe).toOpaque().load(fromByteOffset: 16, as: UInt.self)
        }
        guard stored == probe.viewAddress else { return false }
        return bbx_scope_register(Unmanaged.passUnretained(ScopeBinding.$current).toOpaque()) == 0
    }()
}

extension Blackbox {
    /// The scope of the current task (the innermost `withScope`), inherited by child tasks.
    public static var scope: DiagnosticScope? { ScopeBinding.current?.scope }

    /// Runs `operation` with `scope` bound to the current task: nested scopes add to the outer one.
    /// Reports made while it runs carry it — crashes on the task's thread, assertion reports, captured
    /// errors — in child tasks and unstructured `Task {}`s started inside too (not `Task.detached`).
    /// Another task's crash never names it.
    public static func withScope<Result>(
        _ scope: DiagnosticScope, isolation: isolated (any Actor)? = #isolation,
        _ operation: () async throws -> Result
    ) async rethrows -> Result {
        try await ScopeBinding.$current.withValue(
            ScopeBinding.entering(scope), operation: operation, isolation: isolation)
    }

    /// `withScope` for one request (`handleRequest`): the throw sites noted in it are its own, never
    /// an enclosing scope's that other requests share.
    static func withRequestScope<Result>(
        _ scope: DiagnosticScope, isolation: isolated (any Actor)? = #isolation,
        _ operation: () async throws -> Result
    ) async rethrows -> Result {
        try await ScopeBinding.$current.withValue(
            ScopeBinding.entering(scope, beginsRequest: true), operation: operation, isolation: isolation)
    }

    /// `withScope` for synchronous code; outside any task the scope belongs to the calling thread.
    public static func withScope<Result>(_ scope: DiagnosticScope, _ operation: () throws -> Result) rethrows
        -> Result
    {
        try ScopeBinding.$current.withValue(ScopeBinding.entering(scope), operation: operation)
    }
}

extension ScopeBinding {
    /// The binding for `scope` inside the current one; registers the crash handler's lookup first.
    fileprivate static func entering(_ scope: DiagnosticScope, beginsRequest: Bool = false) -> ScopeBinding {
        _ = crashHandlerCanRead
        if !anyBound.load(ordering: .relaxed) { anyBound.store(true, ordering: .relaxed) }
        return ScopeBinding(scope, within: current, beginsRequest: beginsRequest)
    }
}
