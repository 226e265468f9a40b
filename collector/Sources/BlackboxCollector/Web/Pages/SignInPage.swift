import Foundation
import Hummingbird

/// `/login` (a form for the admin token), `/login/link/<code>` (a one-time link), `/logout`: the
/// routes a browser reaches without a session.
struct SignInPage: PageModel {
    static let template = "login"

    let title = "Sign in"
    /// The header leaves out its sign-out button.
    let isSignInPage = true
    let csrf: String
    let next: String
    let error: String?

    static func routes(store: any CollectorStore, sessions: WebSessions, pages: PageRenderer)
        -> RouteCollection<CollectorContext>
    {
        let routes = RouteCollection(context: CollectorContext.self)
        routes.get("login") { request, _ in
            form(request, pages: pages, next: request.uri.queryParameters.get("next"))
        }
        routes.post("login") { request, _ in
            let fields = try await WebForm.read(request)
            let expected = request.cookies[WebSessions.formCookieName]?.value ?? ""
            guard !expected.isEmpty, WebSessions.constantTimeEquals(expected, fields["csrf"] ?? "") else {
                return form(
                    request, pages: pages, next: fields["next"], error: "The sign-in form expired: try again.",
                    status: .forbidden)
            }
            guard let key = try await store.authenticate(secret: fields["token"] ?? ""), key.kind == .admin else {
                return form(
                    request, pages: pages, next: fields["next"], error: "That is not a valid admin token.",
                    status: .unauthorized)
            }
            var response = try await sessions.start(
                for: key, request: request, redirectTo: WebSessions.safeDestination(fields["next"]))
            response.setCookie(formCookie("", maxAge: 0, request: request))
            return response
        }
        routes.get("login/link/:code") { request, context in
            let code = context.parameters.get("code") ?? ""
            guard let key = try await store.redeemLink(tokenHash: WebSessions.hash(code), now: Date()),
                key.kind == .admin
            else {
                return form(
                    request, pages: pages, next: nil, error: "That sign-in link has expired or was used already.",
                    status: .unauthorized)
            }
            return try await sessions.start(
                for: key, request: request,
                redirectTo: WebSessions.safeDestination(request.uri.queryParameters.get("next")))
        }
        routes.post("logout") { request, _ in
            // Another site's page must not sign a browser out either.
            guard WebSessions.isSameOrigin(request) else { return Response(status: .forbidden) }
            return try await sessions.end(request)
        }
        return routes
    }

    /// The form, with a fresh anti-forgery token in a hidden field and in a cookie.
    private static func form(
        _ request: Request, pages: PageRenderer, next: String?, error: String? = nil, status: HTTPResponse.Status = .ok
    ) -> Response {
        let csrf = WebSessions.newToken()
        var response = pages.render(
            SignInPage(csrf: csrf, next: WebSessions.safeDestination(next), error: error), status: status)
        response.setCookie(formCookie(csrf, maxAge: 3600, request: request))
        return response
    }

    private static func formCookie(_ value: String, maxAge: Int, request: Request) -> Cookie {
        Cookie(
            name: WebSessions.formCookieName, value: value, maxAge: maxAge, path: "/login",
            secure: WebSessions.isSecure(request), httpOnly: true, sameSite: .strict)
    }
}
