import Foundation
import Testing

@testable import BlackboxCollector

/// Every answer, refusals included, carries the headers that keep a browser from running or framing
/// what it did not ask for, and answers to authenticated requests stay out of caches.
@Suite("Security headers")
struct SecurityHeadersTests {
    @Test(
        "pages, the API, refusals and the stylesheet: CSP, nosniff, same-origin referrers, no framing; no-store but for static files"
    )
    func headers() async throws {
        let collector = try await TestCollector.start()
        defer { Task { await collector.stop() } }
        let answers = [
            ("web page", try await HTTP.get(collector, "/")),
            ("API", try await HTTP.get(collector, "/api/v1/groups")),
            ("refused: no key", try await HTTP.request("\(collector.baseURL)/api/v1/groups")),
            ("not found", try await HTTP.get(collector, "/no/such/page")),
            ("health", try await HTTP.request("\(collector.baseURL)/health")),
            ("stylesheet", try await HTTP.request("\(collector.baseURL)/static/style.css")),
        ]
        for (name, answer) in answers {
            #expect(answer.headers["content-security-policy"] == SecurityHeaders.contentSecurityPolicy, "\(name)")
            #expect(answer.headers["x-content-type-options"] == "nosniff", "\(name)")
            #expect(answer.headers["referrer-policy"] == "same-origin", "\(name)")
            #expect(answer.headers["x-frame-options"] == "DENY", "\(name)")
            #expect((answer.headers["cache-control"] == "no-store") == (name != "stylesheet"), "\(name)")
        }
        #expect(answers[2].1.status == 401 && answers[3].1.status == 404)
        #expect(answers[0].1.status == 200)
    }
}
