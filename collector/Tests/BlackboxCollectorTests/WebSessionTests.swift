import BlackboxFormat
import Foundation
import HTTPTypes
import Testing

@testable import BlackboxCollector

/// Web sign-in: sessions are random tokens of their own, never the admin token; the login form is
/// protected against forgery; sign-out, expiry and key revocation end a session; redirects stay on
/// the server; one-time links work once.
@Suite("Web sessions")
struct WebSessionTests {
    /// What a browser gets: the status, where a redirect leads (never followed here), the cookies set.
    struct Answer {
        var status: Int
        var location: String?
        var cookies: [String]
        var body: String

        /// The value the response sets for cookie `name` ("" when it clears it), nil when it does not set it.
        func cookie(_ name: String) -> String? {
            cookies.first { $0.hasPrefix("\(name)=") }.map {
                String($0.dropFirst(name.count + 1).prefix { $0 != ";" })
            }
        }
        func attributes(of name: String) -> String { cookies.first { $0.hasPrefix("\(name)=") } ?? "" }
    }

    func send(
        _ collector: RouterCollector, _ path: String, method: HTTPRequest.Method = .get,
        cookies: [String: String] = [:], headers: [(String, String)] = [], form: [String: String]? = nil
    ) async throws -> Answer {
        var headers = headers
        if !cookies.isEmpty {
            headers.append(("Cookie", cookies.map { "\($0.key)=\($0.value)" }.joined(separator: "; ")))
        }
        var body: Data?
        if let form {
            headers.append(("Content-Type", "application/x-www-form-urlencoded"))
            body = Data(
                form.map { "\($0.key)=\($0.value.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")" }
                    .joined(separator: "&").utf8)
        }
        let answer = try await collector.send(path, method: method, headers: headers, body: body)
        return Answer(
            status: answer.status, location: answer.location, cookies: answer.headers[values: .setCookie],
            body: answer.body)
    }

    /// Signs in through the form as a browser would: fetch it (its anti-forgery cookie and field), post it.
    func signIn(_ collector: RouterCollector, next: String = "/", headers: [(String, String)] = []) async throws
        -> Answer
    {
        let form = try await send(collector, "/login", headers: headers)
        let csrf = try #require(form.cookie(WebSessions.formCookieName))
        #expect(form.body.contains("value=\"\(csrf)\""), "the form carries the same token")
        return try await send(
            collector, "/login", method: .post, cookies: [WebSessions.formCookieName: csrf], headers: headers,
            form: ["token": collector.adminToken, "csrf": csrf, "next": next])
    }

    @Test("signing in sets a random, private session cookie that opens the pages; the admin token is no cookie")
    func signInStartsASession() async throws {
        try await RouterCollector.run { collector in
            let signedIn = try await signIn(collector, next: "/bundles")
            #expect(signedIn.status == 303 && signedIn.location == "/bundles")
            let session = try #require(signedIn.cookie(WebSessions.cookieName))
            #expect(session.count == 64 && session != collector.adminToken)
            let attributes = signedIn.attributes(of: WebSessions.cookieName)
            #expect(attributes.contains("HttpOnly") && attributes.contains("SameSite=Strict"), "\(attributes)")
            #expect(!attributes.contains("Secure"), "plain HTTP: a Secure cookie would not come back")
            #expect(try await send(collector, "/", cookies: [WebSessions.cookieName: session]).status == 200)

            let overTLS = try await signIn(collector, headers: [("X-Forwarded-Proto", "https")])
            #expect(overTLS.attributes(of: WebSessions.cookieName).contains("Secure"))

            // The admin token in a cookie opens nothing.
            let oldStyle = try await send(collector, "/", cookies: [WebSessions.cookieName: collector.adminToken])
            #expect(oldStyle.status == 303 && oldStyle.location == "/login")
        }
    }

    @Test("a login form posted without its anti-forgery token, or with another, is refused")
    func loginForgery() async throws {
        try await RouterCollector.run { collector in
            let noCookie = try await send(
                collector, "/login", method: .post, form: ["token": collector.adminToken, "csrf": "x"])
            #expect(noCookie.status == 403 && noCookie.cookie(WebSessions.cookieName) == nil)
            let form = try await send(collector, "/login")
            let csrf = try #require(form.cookie(WebSessions.formCookieName))
            let mismatch = try await send(
                collector, "/login", method: .post, cookies: [WebSessions.formCookieName: csrf],
                form: ["token": collector.adminToken, "csrf": WebSessions.newToken()])
            #expect(mismatch.status == 403 && mismatch.cookie(WebSessions.cookieName) == nil)
            let wrongToken = try await send(
                collector, "/login", method: .post, cookies: [WebSessions.formCookieName: csrf],
                form: ["token": "bbx_admin_guess", "csrf": csrf])
            #expect(wrongToken.status == 401 && wrongToken.cookie(WebSessions.cookieName) == nil)
        }
    }

    @Test("the group page's state forms need the page's token and this site's origin; with them the state changes")
    func stateFormForgery() async throws {
        try await RouterCollector.run { collector in
            let report = Reports.crash(functions: ["shop.f() -> ()"], version: "1.0")
            #expect(
                try await collector.upload(try BundleArchive.make(app: report.app, host: "h", reports: [report]))
                    .status == 201)
            let id = try #require(
                (try await collector.get("/api/v1/groups").json["items"] as? [[String: Any]])?.first?["id"] as? Int)
            let session = try #require(try await signIn(collector).cookie(WebSessions.cookieName))
            let cookies = [WebSessions.cookieName: session]
            let page = try await send(collector, "/groups/\(id)", cookies: cookies)
            let token = try #require(
                page.body.range(of: #"name="csrf" value="([0-9a-f]{64})""#, options: .regularExpression).map {
                    String(page.body[$0].dropFirst(#"name="csrf" value=""#.count).prefix(64))
                })
            #expect(token != session, "the form token is not the session token")
            let path = "/groups/\(id)/state"
            let missing = try await send(collector, path, method: .post, cookies: cookies, form: ["state": "ignored"])
            let wrong = try await send(
                collector, path, method: .post, cookies: cookies,
                form: ["state": "ignored", "csrf": WebSessions.newToken()])
            let crossSite = try await send(
                collector, path, method: .post, cookies: cookies, headers: [("Origin", "https://evil.example")],
                form: ["state": "ignored", "csrf": token])
            #expect(missing.status == 403 && wrong.status == 403 && crossSite.status == 403)
            // The same host on another port or scheme is another origin (the review's `http://127.0.0.1:9`).
            let host = RouterCollector.authority
            for origin in ["http://\(host):9", "https://\(host)", "https://\(host):80", "http://\(host):443"] {
                let sameHost = try await send(
                    collector, path, method: .post, cookies: cookies, headers: [("Origin", origin)],
                    form: ["state": "ignored", "csrf": token])
                #expect(sameHost.status == 403, "\(origin)")
            }
            #expect(try await collector.get("/api/v1/groups/\(id)").json["state"] as? String == "open")
            let invalid = try await send(
                collector, path, method: .post, cookies: cookies, form: ["state": "closed", "csrf": token])
            #expect(invalid.status == 400 && invalid.body.contains("state must be open, resolved or ignored"))
            let genuine = try await send(
                collector, path, method: .post, cookies: cookies, headers: [("Origin", "http://\(host)")],
                form: ["state": "resolved", "resolvedIn": "2.0", "csrf": token])
            #expect(genuine.status == 303 && genuine.location == "/groups/\(id)")
            let group = try await collector.get("/api/v1/groups/\(id)").json
            #expect(group["state"] as? String == "resolved" && group["resolvedIn"] as? String == "2.0")
        }
    }

    @Test("the symbols page deletes a file with its form (page token needed), and says when a file was left out")
    func symbolsPageDeletes() async throws {
        let fixture = try await SymbolFixture.make()
        defer { fixture.remove() }
        try await RouterCollector.run { collector in
            let debug = try Data(contentsOf: URL(fileURLWithPath: fixture.debugFile))
            #expect(
                try await collector.send(
                    "/api/v1/symbols/\(fixture.buildID)?name=app.debug", method: .put,
                    headers: [("Authorization", "Bearer \(collector.adminToken)")], body: debug
                ).status == 201)
            let file = try #require(
                try await collector.server.store.symbolFiles(
                    buildIDs: [fixture.buildID], in: ProjectScope(projectID: 1)
                ).first)
            for _ in 0..<SymbolicationService.maxFailuresPerFile {
                _ = try await collector.server.store.recordSymbolizerFailure(fileID: file.id)
            }
            let session = try #require(try await signIn(collector).cookie(WebSessions.cookieName))
            let cookies = [WebSessions.cookieName: session]
            let page = try await send(collector, "/symbols", cookies: cookies)
            #expect(page.body.contains("left out of symbolication"), "\(page.body)")
            let token = try #require(
                page.body.range(of: #"name="csrf" value="([0-9a-f]{64})""#, options: .regularExpression).map {
                    String(page.body[$0].dropFirst(#"name="csrf" value=""#.count).prefix(64))
                })
            let path = "/symbols/\(fixture.buildID)/delete"
            let forged = try await send(collector, path, method: .post, cookies: cookies, form: ["sha256": file.sha256])
            #expect(forged.status == 403)
            let deleted = try await send(
                collector, path, method: .post, cookies: cookies, form: ["sha256": file.sha256, "csrf": token])
            #expect(deleted.status == 303 && deleted.location == "/symbols")
            #expect(try await collector.server.store.symbolFiles(in: ProjectScope(projectID: 1), page: Page()).isEmpty)
        }
    }

    @Test("after signing in, only paths on this server are followed")
    func noOpenRedirect() async throws {
        try await RouterCollector.run { collector in
            for (next, expected) in [
                ("/groups/1?offset=50", "/groups/1?offset=50"), ("//evil.example/", "/"), ("/\\evil.example", "/"),
                ("https://evil.example/", "/"), ("/\t/evil.example", "/"), ("", "/"),
            ] {
                let answer = try await signIn(collector, next: next)
                #expect(answer.status == 303 && answer.location == expected, "\(next) -> \(answer.location ?? "nil")")
            }
        }
    }

    @Test("sign-out, expiry and revoking the admin key each end a session")
    func sessionsEnd() async throws {
        try await RouterCollector.run { collector in
            func opens(_ session: String) async throws -> Bool {
                try await send(collector, "/", cookies: [WebSessions.cookieName: session]).status == 200
            }
            let signedIn = try await signIn(collector)
            let first = try #require(signedIn.cookie(WebSessions.cookieName))
            #expect(signedIn.attributes(of: WebSessions.cookieName).contains("Max-Age=43200"), "12 hours")
            let second = try #require(try await signIn(collector).cookie(WebSessions.cookieName))
            let forged = try await send(
                collector, "/logout", method: .post, cookies: [WebSessions.cookieName: first],
                headers: [("Origin", "https://evil.example")])
            let stillOpen = try await opens(first)
            #expect(forged.status == 403 && stillOpen, "another site cannot sign a browser out")
            let out = try await send(collector, "/logout", method: .post, cookies: [WebSessions.cookieName: first])
            #expect(out.status == 303 && out.cookie(WebSessions.cookieName) == "")
            #expect(try await !opens(first), "signed out")
            #expect(try await opens(second), "another session goes on")

            // Expiry, asked of the store at a later time rather than waited for.
            let store = collector.server.store
            let hash = WebSessions.hash(second)
            #expect(try await store.session(tokenHash: hash, now: Date().addingTimeInterval(12 * 3600 - 60)) != nil)
            #expect(try await store.session(tokenHash: hash, now: Date().addingTimeInterval(12 * 3600 + 60)) == nil)

            let admin = try #require(try await store.authenticate(secret: collector.adminToken))
            #expect(try await store.revokeKey(id: admin.id))
            #expect(try await !opens(second), "its key was revoked")
        }
    }

    @Test("a one-time sign-in link signs in once and then no more")
    func loginLink() async throws {
        try await RouterCollector.run { collector in
            let minted = try await collector.send(
                "/api/v1/login-links", method: .post, headers: [("Authorization", "Bearer \(collector.adminToken)")])
            #expect(minted.status == 201, "\(minted.body)")
            let path = try #require(minted.json["path"] as? String)
            #expect(!path.contains(collector.adminToken))
            let used = try await send(collector, path + "?next=/logs")
            #expect(used.status == 303 && used.location == "/logs")
            let session = try #require(used.cookie(WebSessions.cookieName))
            #expect(try await send(collector, "/", cookies: [WebSessions.cookieName: session]).status == 200)
            #expect(try await send(collector, path).status == 401, "used once")
            let ingest = try await collector.send(
                "/api/v1/login-links", method: .post, headers: [("Authorization", "Bearer \(collector.ingestKey)")])
            #expect(ingest.status == 403, "an ingest key cannot mint sign-in links")
        }
    }
}
