import Hummingbird

/// Per-request state before authentication: `AdminAuthentication` sets the key of read routes, which
/// then run with an `AuthenticatedContext`.
struct CollectorContext: RequestContext {
    var coreContext: CoreRequestContextStorage
    var key: APIKey?

    init(source: Source) {
        self.coreContext = .init(source: source)
        self.key = nil
    }

    /// Bodies are streamed by the ingest route itself; nothing else decodes large bodies.
    var maxUploadSize: Int { 1 << 20 }
}

/// The context of every route behind `AdminAuthentication`: it has an admin key, and with it the one
/// project the request may read (`scope`), so a handler cannot read without one.
struct AuthenticatedContext: ChildRequestContext {
    var coreContext: CoreRequestContextStorage
    let key: APIKey

    init(context: CollectorContext) throws {
        // Only reachable when a route is registered without the middleware: refuse rather than read.
        guard let key = context.key else { throw APIError.missingKey() }
        self.coreContext = context.coreContext
        self.key = key
    }

    var maxUploadSize: Int { 1 << 20 }

    var scope: ProjectScope { ProjectScope(of: key) }

    /// The `:id` path parameter; a non-number is a 400 with a reason.
    func id() throws -> Int64 {
        guard let text = parameters.get("id"), let id = Int64(text) else { throw APIError.invalidID() }
        return id
    }
}
