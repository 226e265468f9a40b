#if Hummingbird
    import Blackbox
    public import Hummingbird

    /// Runs each request in a Blackbox scope: its route (the matched pattern, `/items/{id}`), method
    /// and Hummingbird's request id, and the trace id when swift-otel's metadata provider is
    /// configured. A crash in the handler, an assertion report or a captured error then names this
    /// request, never another one running at the same time. A thrown error that becomes a 5xx answer,
    /// and a 5xx response a handler returns, are captured as error reports (`Blackbox.capture`) with
    /// the request's scope; 4xx answers are the client's problem and are not.
    ///
    /// ```swift
    /// let router = Router()
    /// router.add(middleware: TracingMiddleware())            // if you trace: the span first
    /// router.add(middleware: BlackboxRequestMiddleware())   // then the scope, which reads its ids
    /// ```
    public struct BlackboxRequestMiddleware<Context: RequestContext>: RouterMiddleware {
        public init() {}

        public func handle(
            _ request: Request, context: Context, next: (Request, Context) async throws -> Response
        ) async throws -> Response {
            // Router middleware runs after the route is matched, so the pattern is known here.
            let scope = DiagnosticScope(
                route: context.endpointPath ?? request.uri.path, method: request.method.rawValue,
                requestID: context.logger[metadataKey: "hb.request.id"]?.description)
            return try await Blackbox.handleRequest(
                in: scope, status: { Int($0.status.code) },
                statusOfError: { ($0 as? any HTTPResponseError).map { Int($0.status.code) } },
                handle: { try await next(request, context) })
        }
    }
#endif
