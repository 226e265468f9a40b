import Foundation
import HTTPTypes
import Hummingbird

/// Browser sign-in. A session is a random token of its own in an HttpOnly, SameSite=Strict cookie
/// (Secure when the request came over TLS through a proxy); only its sha256 is stored, it expires,
/// sign-out ends it, and revoking the admin key ends all of its sessions. The admin token itself
/// never goes into a cookie or a URL: the printed sign-in link holds a one-time code instead.
struct WebSessions: Sendable {
    let store: any CollectorStore
    let lifetime: Duration

    static let cookieName = "blackbox_session"
    /// The login form's anti-forgery token (double submit): a cross-site page cannot read or set it,
    /// so it cannot sign a browser in to an account of its choosing.
    static let formCookieName = "blackbox_login"
    static let linkLifetime: Duration = .seconds(3600)

    /// 256 random bits, hex.
    static func newToken() -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<4).map { _ in String(format: "%016llx", generator.next() as UInt64) }.joined()
    }

    static func hash(_ token: String) -> String { APIKey.hash(token) }

    /// The anti-forgery token the pages' forms carry (a synchronizer token derived from the session's
    /// own, so nothing more is stored; a cross-site page can read neither). Nil without a session.
    static func formToken(for request: Request) -> String? {
        guard let token = request.cookies[cookieName]?.value, !token.isEmpty else { return nil }
        return hash("form:" + token)
    }

    /// A form post a person made on one of our pages: with the session's form token, and not sent
    /// from another site. A request without a session cookie (a script with the admin token in
    /// `Authorization`) cannot be forged by a browser and needs neither.
    static func isGenuineForm(_ request: Request, token: String?) -> Bool {
        guard let expected = formToken(for: request) else { return true }
        return isSameOrigin(request) && constantTimeEquals(expected, token ?? "")
    }

    /// No `Origin` header, or one naming this host.
    /// Whether a form post comes from a page of this server: scheme, host and port of `Origin` against
    /// the request's own (the scheme from `X-Forwarded-Proto` behind a TLS-terminating proxy).
    static func isSameOrigin(_ request: Request) -> Bool {
        guard let origin = request.headers[.origin] else { return true }
        guard let authority = request.head.authority, let from = URLComponents(string: origin),
            let here = URLComponents(string: "//\(authority)")
        else { return false }
        let scheme = request.headers[HTTPField.Name("X-Forwarded-Proto")!]?.lowercased() ?? "http"
        func port(_ components: URLComponents, scheme: String?) -> Int? {
            components.port ?? (scheme == "https" ? 443 : 80)
        }
        return from.scheme?.lowercased() == scheme && from.host?.lowercased() == here.host?.lowercased()
            && port(from, scheme: from.scheme) == port(here, scheme: scheme)
    }

    /// The admin key of the request's live session, if any.
    func key(for request: Request) async throws -> APIKey? {
        guard let token = request.cookies[Self.cookieName]?.value, !token.isEmpty else { return nil }
        return try await store.session(tokenHash: Self.hash(token), now: Date())
    }

    /// Starts a session for `key`; the response carries its cookie.
    func start(for key: APIKey, request: Request, redirectTo destination: String) async throws -> Response {
        let token = Self.newToken()
        try await store.createSession(
            tokenHash: Self.hash(token), keyID: key.id, kind: .session,
            expiresAt: Date().addingTimeInterval(TimeInterval(lifetime.components.seconds)))
        var response = Response(status: .seeOther, headers: [.location: destination])
        response.setCookie(
            Cookie(
                name: Self.cookieName, value: token, maxAge: Int(lifetime.components.seconds), path: "/",
                secure: Self.isSecure(request), httpOnly: true, sameSite: .strict))
        return response
    }

    func end(_ request: Request) async throws -> Response {
        if let token = request.cookies[Self.cookieName]?.value {
            try await store.deleteSession(tokenHash: Self.hash(token))
        }
        var response = Response(status: .seeOther, headers: [.location: "/login"])
        response.setCookie(
            Cookie(
                name: Self.cookieName, value: "", maxAge: 0, path: "/", secure: Self.isSecure(request), httpOnly: true,
                sameSite: .strict))
        return response
    }

    /// A one-time sign-in link's path for `key`, valid for `linkLifetime`.
    func makeLink(for key: APIKey) async throws -> String {
        let code = Self.newToken()
        try await store.createSession(
            tokenHash: Self.hash(code), keyID: key.id, kind: .link,
            expiresAt: Date().addingTimeInterval(TimeInterval(Self.linkLifetime.components.seconds)))
        return "/login/link/\(code)"
    }

    /// Behind a TLS-terminating proxy (the normal deployment) the proxy says so.
    static func isSecure(_ request: Request) -> Bool {
        request.headers[HTTPField.Name("X-Forwarded-Proto")!]?.lowercased() == "https"
    }

    /// Where to go after signing in: a path on this server only. `//host` and `/\host` (which
    /// browsers treat as `//host`) lead to other sites, so anything unusual goes to `/`.
    static func safeDestination(_ next: String?) -> String {
        guard let next, next.hasPrefix("/"), !next.hasPrefix("//"), !next.contains("\\"),
            next.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7F })
        else { return "/" }
        return next
    }

    /// Compares without stopping at the first difference (the form token is a secret).
    static func constantTimeEquals(_ a: String, _ b: String) -> Bool {
        let (x, y) = (Array(a.utf8), Array(b.utf8))
        guard x.count == y.count else { return false }
        return zip(x, y).reduce(UInt8(0)) { $0 | ($1.0 ^ $1.1) } == 0
    }
}
