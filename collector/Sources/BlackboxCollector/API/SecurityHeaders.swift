import HTTPTypes
import Hummingbird

extension HTTPField.Name {
    // Not among HTTPTypes' names (1.8).
    static let referrerPolicy = Self("Referrer-Policy")!
    static let xFrameOptions = Self("X-Frame-Options")!
}

/// Headers every answer carries, refusals included: the web UI runs only its own script file and
/// loads nothing from elsewhere, so its policy forbids inline scripts and other origins (an injected
/// `<script>` or a framing page gets nothing); answers to authenticated requests are never kept by a
/// browser or proxy cache. The static files are the only cacheable answers.
struct SecurityHeaders: RouterMiddleware {
    typealias Context = CollectorContext

    static let contentSecurityPolicy =
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        var response: Response
        do {
            response = try await next(request, context)
        } catch let error as any HTTPResponseError {
            response = try error.response(from: request, context: context)
        }
        response.headers[.xContentTypeOptions] = "nosniff"
        response.headers[.referrerPolicy] = "same-origin"
        response.headers[.contentSecurityPolicy] = Self.contentSecurityPolicy
        response.headers[.xFrameOptions] = "DENY"
        if !request.uri.path.hasPrefix("/static/") { response.headers[.cacheControl] = "no-store" }
        return response
    }
}
