import BlackboxFormat
import BlackboxTestSupport
import CollectorTestSupport
import Foundation
import Testing

@testable import BlackboxCollector

/// The web UI in a real browser: Debian's Chromium, headless, loading pages of a collector process
/// that received real uploads. Each page must render its data and run its scripts without an error.
@Suite("Web UI in headless Chromium")
struct WebUIBrowserTests {
    static var chromium: String? {
        ["/usr/bin/chromium", "/usr/bin/chromium-browser"].first { FileManager.default.isExecutableFile(atPath: $0) }
    }
    /// `make test` installs Chromium and sets this, so a missing browser fails instead of skipping.
    static var required: Bool { ProcessInfo.processInfo.environment["BLACKBOX_REQUIRE_CHROMIUM"] == "1" }

    @Test("pages render groups, reports, bundles and logs from real uploads, with no script errors")
    func pages() async throws {
        guard let chromium = Self.chromium else {
            #expect(!Self.required, "Chromium is not installed")
            return
        }
        let scratch = TemporaryDirectory(prefix: "collector-web")
        defer { scratch.remove() }
        let directory = scratch.path
        let collector = try await CollectorProcess.start(dataDirectory: directory)
        defer { collector.kill(SIGTERM) }

        var report = Reports.crash(
            functions: ["shop.Cart.total() -> Swift.Int", "shop.checkout() -> ()"],
            message: "cart <b>broke</b> & stopped")
        report.annotations = ["request-id": "r-<42>"]
        report.scope = [
            "route": "/cart/:id", "method": "POST", "request-id": "req-<7>",
            "trace-id": "4bf92f3577b34da6a3ce929d0e0e4736",
        ]
        report.threads = [
            .init(id: 100, name: "main", crashed: true, frameSource: "libunwind", frames: report.frames),
            .init(
                id: 101, name: "bbx-worker", crashed: false, frameSource: "frame-pointers",
                scope: ["request-id": "req-other", "route": "/health"],
                frames: [
                    .init(
                        index: 0, address: "0x555500002000", imageIndex: 0, imageOffset: "0x2000",
                        symbols: [.init(function: "shop.Worker.wait() -> ()")])
                ]),
            // No scope of its own: the page must not show the crashed thread's instead.
            .init(
                id: 102, name: "blackbox-writer", crashed: false, frameSource: "frame-pointers",
                frames: [
                    .init(
                        index: 0, address: "0x555500003000", imageIndex: 0, imageOffset: "0x3000",
                        symbols: [.init(function: "shop.Writer.drain() -> ()")])
                ]),
        ]
        let log = Data(
            ("2026-11-22T00:00:00.000Z INFO  shop: <script>alert(1)</script> browser-needle\n"
                + "2026-11-22T00:00:00.001Z INFO  shop: charging the card trace_id=4bf92f3577b34da6a3ce929d0e0e4736\n")
                .utf8)
        let bundle = try BundleArchive.make(
            app: report.app, host: "web-host", reports: [report], logs: [("shop.log", log)])
        let upload = try await HTTP.request(
            "\(collector.baseURL)/api/v1/bundles", method: .POST,
            headers: [("Authorization", "Bearer \(collector.ingestKey)"), ("Upload-Id", UUID().uuidString)],
            body: bundle)
        #expect(upload.status == 201, "\(upload.text)")
        let admin = [("Authorization", "Bearer \(collector.adminToken)")]
        let group = try #require(
            (try await HTTP.request("\(collector.baseURL)/api/v1/groups", headers: admin).json["items"]
                as? [[String: Any]])?.first)
        let groupID = try #require(group["id"] as? Int)
        let reportID = try #require(group["latestReportID"] as? Int)
        let bundleID = try #require(upload.json["bundleID"] as? Int)
        let files = try JSONSerialization.jsonObject(
            with: try await HTTP.request("\(collector.baseURL)/api/v1/bundles/\(bundleID)/files", headers: admin).body)
        let logID = try #require((files as? [[String: Any]])?.first { $0["kind"] as? String == "log" }?["id"] as? Int)
        // A Sentry SDK's error event: Python frames, no images, the SDK's in_app.
        let event = #"""
            {"event_id":"5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e","platform":"python","level":"error","release":"orders@2.1",
             "exception":{"values":[{"type":"ValueError","value":"invalid literal for int(): 'seven'",
              "stacktrace":{"frames":[
               {"function":"handle","module":"orders","abs_path":"/srv/app/orders.py","lineno":20,"in_app":true},
               {"function":"parse","module":"orders","abs_path":"/srv/app/orders.py","lineno":13,"in_app":true,
                "pre_context":["def parse(order):","    # the id is a number"],"context_line":"    return int(order)",
                "post_context":["","def handle(order):"]}]}}]},
             "breadcrumbs":{"values":[{"category":"http","message":"GET /orders/7"}]}}
            """#
        let sentry = try await HTTP.request(
            "\(collector.baseURL)/api/1/envelope/", method: .POST,
            headers: [("X-Sentry-Auth", "Sentry sentry_key=\(collector.ingestKey)")],
            body: SentryEnvelopeFormat.envelope(ofEvent: Data(event.utf8)))
        #expect(sentry.status == 200, "\(sentry.text)")
        let sentryGroup = try #require(
            (try await HTTP.request("\(collector.baseURL)/api/v1/groups", headers: admin).json["items"]
                as? [[String: Any]])?.first { ($0["title"] as? String)?.hasPrefix("ValueError") == true })
        let sentryReportID = try #require(sentryGroup["latestReportID"] as? Int)
        // The indexer runs in the background; wait until the line is searchable.
        _ = try await HTTP.searchLogs(collector.baseURL, token: collector.adminToken, query: "browser-needle")

        let pages: [(String, [String])] = [
            ("/", ["SIGSEGV in shop.Cart.total()", "<td class=\"number\">1</td>"]),
            (
                "/groups/\(groupID)",
                [
                    "shop.Cart.total", "cart &lt;b&gt;broke&lt;/b&gt; &amp; stopped", "host-a (1)",
                    // Never triaged: open since it was first seen.
                    "<span class=\"muted\">since <time datetime=\"20",
                ]
            ),
            (
                "/reports/\(reportID)",
                [
                    "shop.checkout() -&gt; ()", "Sources/shop/main.swift:10", "/srv/shop/shop", "about to fail",
                    "Missing debug files", "<code>cd</code> /usr/lib/x86_64-linux-gnu/libc.so.6",
                    // Other threads collapsed (no `open`), each summarized by its app function.
                    "Other threads (2)", "serving request-id req-other, route /health",
                    "Thread 102 blackbox-writer (frame-pointers): 1 frames, in shop.Writer.drain(",
                    "<details class=\"thread\"><summary>Thread 101 bbx-worker (frame-pointers): 1 frames",
                    "in shop.Worker.wait(", "shop.Worker.wait() -&gt; ()",
                    "<dt>request-id</dt><dd>r-&lt;42&gt;</dd>",
                    "<h2>Scope</h2>", "<dt>route</dt><dd>/cart/:id</dd>", "<dt>request-id</dt><dd>req-&lt;7&gt;</dd>",
                    "href=\"/traces/4bf92f3577b34da6a3ce929d0e0e4736\"",
                ]
            ),
            (
                "/symbols",
                ["Missing debug files", "<td><code>cd</code></td>", "No symbol files yet.", "llvm-symbolizer"]
            ),
            ("/bundles", ["web-host", "<td class=\"number\">3</td>"]),
            ("/bundles/\(bundleID)", ["logs/shop.log", "reports/crash-"]),
            ("/files/\(logID)", ["&lt;script&gt;alert(1)&lt;/script&gt; browser-needle"]),
            ("/logs?q=browser-needle", ["logs/shop.log:1", "browser-needle"]),
            // A Sentry event's report: its frames, innermost first, as the app's own, with the source
            // lines the SDK sent; a Python event has no process, addresses or images (absent below).
            (
                "/reports/\(sentryReportID)",
                [
                    "orders.parse", "/srv/app/orders.py:13", "orders.handle", "received through the Sentry protocol",
                    "<span class=\"source-line current\"><span class=\"line-number\">13</span>    return int(order)</span>",
                    "<span class=\"line-number\">11</span>def parse(order):",
                    "<dt>Platform</dt><dd>python (through the Sentry protocol)</dd>",
                ]
            ),
            // The project page: the Sentry DSN's shape for this collector and its ingest key.
            (
                "/project",
                [
                    "Send from a Sentry SDK",
                    "http://&lt;ingest key&gt;@\(collector.baseURL.dropFirst("http://".count))/1",
                    "<td>ingest</td>", "<td>admin</td>",
                ]
            ),
            // The report page's trace link: the trace's report and lines; the groups it touched.
            (
                "/traces/4bf92f3577b34da6a3ce929d0e0e4736",
                ["href=\"/reports/\(reportID)\"", "logs/shop.log:2", "charging the card"]
            ),
            ("/?trace=4bf92f3577b34da6a3ce929d0e0e4736", ["SIGSEGV in shop.Cart.total()"]),
            ("/?trace=0000aaaa0000aaaa0000aaaa0000aaaa", ["No groups here."]),
        ]
        // What a page must not show: a Python event read as a native crash ("Process: 0", 0x0
        // addresses, "?" images, an empty images table).
        let absent = [
            "/reports/\(sentryReportID)": [
                "<dt>Process</dt>", "<code>0x0</code>", "<h2>Binary images</h2>", "<th>Image</th>",
            ],
            "/reports/\(reportID)": ["<dt>Platform</dt>"],
        ]
        for (path, expected) in pages {
            // A fresh browser profile per page: sign in with a one-time link, as an operator would.
            let link = try await HTTP.request(
                "\(collector.baseURL)/api/v1/login-links", method: .POST, headers: admin)
            let signIn = try #require(link.json["path"] as? String, "\(link.text)")
            let next = path.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? path
            let dom = try await dumpDOM(chromium, url: "\(collector.baseURL)\(signIn)?next=\(next)")
            #expect(dom.contains("data-ready=\"yes\""), "\(path): the page's scripts ran")
            #expect(!dom.contains("data-script-error=\""), "\(path): a script error")
            #expect(!dom.contains("<script>alert(1)"), "\(path): upload content must be escaped")
            for text in expected { #expect(dom.contains(text), "\(path) lacks \(text)") }
            for text in absent[path] ?? [] { #expect(!dom.contains(text), "\(path) shows \(text)") }
            // Mustache looks a name a thread lacks up in the page's context: once every thread without
            // a scope showed the crashed report's ("serving [[…]]").
            #expect(!dom.contains("serving [["), "\(path): a thread shows another's scope")
        }
        let loginPage = try await dumpDOM(chromium, url: "\(collector.baseURL)/groups/\(groupID)")
        #expect(loginPage.contains("Sign in"), "without a session, pages ask for the admin token")
    }

    /// On a thread of its own (see `BrowserDriver.run`): the page comes from a server in this process.
    func dumpDOM(_ chromium: String, url: String) async throws -> String {
        try await offThePool { try Self.dumpDOMBlocking(chromium, url: url) }
    }

    static func dumpDOMBlocking(_ chromium: String, url: String) throws -> String {
        let profileScratch = TemporaryDirectory(prefix: "chromium")
        defer { profileScratch.remove() }
        let (_, data) = try ChildRun.run(
            chromium,
            [
                "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--user-data-dir=\(profileScratch.path)", "--virtual-time-budget=2000", "--dump-dom", url,
            ], errors: .discarded)
        return String(decoding: data, as: UTF8.self)
    }
}

/// Issue 53 item 2 where people read it: the ServiceGroup watchdog's report of a service that swallowed
/// its shutdown, from a real child process (`blackbox-test-child service-stall`), uploaded by the CLI
/// and opened in Chromium.
@Suite("Web UI: the service watchdog's report")
struct ServiceWatchdogPageTests {
    @Test("a stalled shutdown's hang report names the services still running, on its page")
    func stalledShutdownPage() async throws {
        let scratch = TemporaryDirectory(prefix: "service-stall")
        defer { scratch.remove() }
        let stalled = try await Tool.run("blackbox-test-child", ["service-stall", scratch.path])
        #expect(stalled.status == 70, "the watchdog's exit status: \(stalled.stdout) \(stalled.stderr.suffix(2_000))")
        let collector = try await TestCollector.start()
        defer { Task { await collector.stop() } }
        let upload = try await Tool.run(
            "blackbox", ["upload", scratch.path, "--server", collector.baseURL, "--key", collector.ingestKey])
        #expect(upload.status == 0, "\(upload.stderr)")
        let groups = try await HTTP.get(collector, "/api/v1/groups").json["items"] as? [[String: Any]] ?? []
        let hang = try #require(groups.first { $0["kind"] as? String == "hang" }, "\(groups)")
        // Led by what is stuck, not by the main thread's frame (which waits on the group, as it should).
        #expect(
            (hang["title"] as? String)?.hasPrefix(
                "hang: ServiceGroup did not finish within 1.0 s of shutting down (graceful shutdown, told first to stubborn)"
            )
                == true, "\(hang)")
        let reportID = try #require(hang["latestReportID"] as? Int)
        let page = try await HTTP.get(collector, "/reports/\(reportID)").text
        #expect(page.contains("ServiceGroup did not finish within 1.0 s of shutting down"), "\(page)")
        #expect(page.contains("still running: stubborn (told graceful shutdown"), "\(page)")

        guard let chromium = WebUIBrowserTests.chromium else {
            #expect(!WebUIBrowserTests.required, "Chromium is not installed")
            return
        }
        let link = try await HTTP.request(
            "\(collector.baseURL)/api/v1/login-links", method: .POST,
            headers: [("Authorization", "Bearer \(collector.adminToken)")])
        let signIn = try #require(link.json["path"] as? String, "\(link.text)")
        let output = BrowserDriver.outputDirectory(for: "service-watchdog")
        let run = try await BrowserDriver.run(
            chromium,
            [
                .navigate("\(collector.baseURL)\(signIn)?next=%2Freports%2F\(reportID)"),
                .evaluate("document.querySelector('h1').textContent"),
                .screenshot("stalled-shutdown.png"),
            ], output: output)
        #expect(run.failed == nil && run.errors.isEmpty, "\(run.failed ?? "") \(run.errors)")
        #expect(
            run.values.contains { ($0 as? String)?.hasPrefix("hang: ServiceGroup did not finish") == true },
            "\(run.values)")
        print("service watchdog screenshot: \(output)")
    }
}
