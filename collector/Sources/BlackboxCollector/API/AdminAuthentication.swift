import Hummingbird

/// Reading needs the project's admin token: `Authorization: Bearer <token>` for the API, or a web
/// session (`WebSessions`, started at `/login`) for the web UI. Ingest keys are refused here; the
/// symbol store's routes also accept symbols keys (`accepts`).
struct AdminAuthentication: RouterMiddleware {
    typealias Context = CollectorContext
    let store: any KeyStore
    let sessions: WebSessions
    /// Web pages redirect to the login page; the API answers 401 with a JSON reason.
    let redirectToLogin: Bool
    var accepts: Set<APIKey.Kind> = [.admin]

    static func bearer(_ request: Request) -> String? {
        guard let header = request.headers[.authorization] else { return nil }
        let parts = header.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { return nil }
        let secret = parts[1].trimmingCharacters(in: .whitespaces)
        return secret.isEmpty ? nil : secret
    }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        let key: APIKey
        if let secret = Self.bearer(request) {
            guard let found = try await store.authenticate(secret: secret) else { return try refuse(.invalidKey()) }
            key = found
        } else if redirectToLogin, let found = try await sessions.key(for: request) {
            key = found
        } else {
            return try refuse(.missingKey())
        }
        guard accepts.contains(key.kind) else { return try refuse(.forbidden()) }
        var context = context
        context.key = key
        return try await next(request, context)
    }

    private func refuse(_ error: APIError) throws -> Response {
        if redirectToLogin { return Response(status: .seeOther, headers: [.location: "/login"]) }
        throw error
    }
}
