import BlackboxTestSupport
import Foundation
import Testing

@testable import BlackboxCollector

/// Every answer, refusals included, carries the headers that keep a browser from running or framing
/// what it did not ask for, and answers to authenticated requests stay out of caches.
@Suite("Security headers")
struct SecurityHeadersTests {
    @Test("a data directory made beforehand with mode 0755 becomes private at start")
    func privateDataDirectory() throws {
        let scratch = TemporaryDirectory(prefix: "data-mode")
        defer { scratch.remove() }
        let data = "\(scratch.path)/data"
        #expect(mkdir(data, 0o755) == 0 && chmod(data, 0o755) == 0)
        _ = try CollectorServer(configuration: CollectorConfiguration(dataDirectory: data))
        var status = stat()
        #expect(stat(data, &status) == 0)
        #expect(status.st_mode & 0o777 == 0o700, "mode \(String(status.st_mode & 0o777, radix: 8))")
    }

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
