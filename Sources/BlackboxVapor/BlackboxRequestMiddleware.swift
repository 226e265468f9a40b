#if Vapor
    import Blackbox
    public import Vapor

    /// Runs each request in a Blackbox scope: its route (the matched pattern, `/items/:id`), method
    /// and Vapor's request id (the `request-id` in every line the request logs), and the trace id when
    /// swift-otel's metadata provider is configured. A crash in the handler, an assertion report or a
    /// captured error then names this request, never another one running at the same time. A thrown
    /// error that becomes a 5xx answer, and a 5xx response a handler returns, are captured as error
    /// reports (`Blackbox.capture`) with the request's scope; 4xx answers are not.
    ///
    /// ```swift
    /// app.middleware.use(BlackboxRequestMiddleware())
    /// ```
    public struct BlackboxRequestMiddleware: AsyncMiddleware {
        public init() {}

        public func respond(to request: Request, chainingTo next: any AsyncResponder) async throws -> Response {
            // Vapor chains global middleware per route, after the route is matched.
            let route = request.route.map { "/" + $0.path.map(\.description).joined(separator: "/") }
            let scope = DiagnosticScope(
                route: route ?? request.url.path, method: request.method.rawValue, requestID: request.id)
            return try await Blackbox.handleRequest(
                in: scope, status: { Int($0.status.code) },
                statusOfError: { ($0 as? any AbortError).map { Int($0.status.code) } },
                handle: { try await next.respond(to: request) })
        }
    }
#endif
