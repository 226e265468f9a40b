import BlackboxFormat
import BlackboxTestSupport
import CollectorTestSupport
import Foundation
import Testing

@testable import BlackboxCollector

/// The group page's state buttons, clicked in headless Chromium; and a cross-site form, which must
/// change nothing.
@Suite("Web UI: group states in headless Chromium")
struct WebTriageBrowserTests {
    @Test("resolve, reopen and ignore with the buttons; a forged cross-site form is refused; no script errors")
    func stateButtons() async throws {
        guard let chromium = WebUIBrowserTests.chromium else {
            #expect(!WebUIBrowserTests.required, "Chromium is not installed")
            return
        }
        let scratch = TemporaryDirectory(prefix: "collector-triage-web")
        defer { scratch.remove() }
        let collector = try await CollectorProcess.start(
            dataDirectory: scratch.path, arguments: ["--webhook-allow", "127.0.0.0/8"])
        defer { collector.kill(SIGTERM) }
        // A webhook nobody answers (the discard port): its delivery shows on the alerts page.
        let webhook = try await HTTP.request(
            "\(collector.baseURL)/api/v1/webhooks", method: .POST,
            headers: [("Authorization", "Bearer \(collector.adminToken)")],
            body: Data(#"{"url": "http://127.0.0.1:9/hook", "events": ["new-group", "threshold"]}"#.utf8))
        #expect(webhook.status == 201, "\(webhook.text)")
        var report = Reports.crash(
            functions: ["shop.Cart.total() -> Swift.Int", "shop.checkout() -> ()"], version: "1.1")
        // A read just past the heap's end, with the memory map the signal handler records.
        report.signal?.faultAddress = "0x555600021010"
        report.signal?.access = "read"
        report.signal?.faultMemory = .init(
            below: .init(start: "0x555600000000", end: "0x555600021000", permissions: "rw-p", path: "[heap]"),
            above: .init(
                start: "0x7f0000000000", end: "0x7f0000200000", permissions: "r-xp", path: "/usr/lib/libc.so.6"))
        let upload = try await HTTP.request(
            "\(collector.baseURL)/api/v1/bundles", method: .POST,
            headers: [("Authorization", "Bearer \(collector.ingestKey)"), ("Upload-Id", UUID().uuidString)],
            body: try BundleArchive.make(app: report.app, host: "web-host", reports: [report]))
        #expect(upload.status == 201, "\(upload.text)")
        let admin = [("Authorization", "Bearer \(collector.adminToken)")]
        func group() async throws -> [String: Any] {
            let groups = try await HTTP.request("\(collector.baseURL)/api/v1/groups", headers: admin).json["items"]
            return try #require((groups as? [[String: Any]])?.first)
        }
        let id = try #require(try await group()["id"] as? Int)
        let reportID = try #require(try await group()["latestReportID"] as? Int)
        let link = try await HTTP.request("\(collector.baseURL)/api/v1/login-links", method: .POST, headers: admin)
        let signIn = try #require(link.json["path"] as? String, "\(link.text)")

        // Another site's page that posts the form on load: with SameSite=Strict the session cookie
        // does not go with it, and without the page's token it would be refused anyway.
        let forgery = scratch.write(
            "forgery.html",
            """
            <form id="f" method="post" action="\(collector.baseURL)/groups/\(id)/state">
            <input name="state" value="open"></form><script>document.getElementById("f").submit()</script>
            """)

        let state = "document.querySelector('.status .state').textContent"
        let output = BrowserDriver.outputDirectory(for: "web-triage")
        let run = try await BrowserDriver.run(
            chromium,
            [
                .navigate("\(collector.baseURL)\(signIn)?next=%2Fgroups%2F\(id)"),
                .evaluate(state),
                .screenshot("1-open.png"),
                .fill("form.resolve input[name=resolvedIn]", "1.2"),
                .click("form.resolve button"),
                .evaluate(state),
                .evaluate("document.querySelector('.status').textContent"),
                .screenshot("2-resolved.png"),
                .click("form.reopen button"),
                .evaluate(state),
                .fill("form.ignore input[name=ignoreUntilMoreOccurrences]", "3"),
                .click("form.ignore button"),
                .evaluate(state),
                .evaluate("document.querySelector('details.history').textContent"),
                .screenshot("3-ignored.png"),
                .navigate("file://\(forgery)"),
                .navigate("\(collector.baseURL)/"),
                .evaluate("document.querySelector('tr.group .state').textContent"),
                .screenshot("4-groups.png"),
                .navigate("\(collector.baseURL)/alerts"),
                .screenshot("5-alerts.png"),
                .evaluate("document.querySelectorAll('tr.webhook').length"),
                .evaluate(
                    "document.querySelector('tr.delivery')?.textContent ?? document.querySelector('main').textContent"),
                .navigate("\(collector.baseURL)/groups/\(id)"),
                .evaluate("document.querySelectorAll('svg.chart-hours rect.bar').length"),
                .evaluate("document.querySelectorAll('svg.chart-days rect.bar').length"),
                .evaluate("document.querySelectorAll('svg.chart-versions rect.bar').length"),
                .evaluate(
                    "[...document.querySelectorAll('svg.chart-hours rect.bar')].filter(r => +r.getAttribute('height') > 0).length"
                ),
                .screenshot("6-trend.png"),
                .navigate("\(collector.baseURL)/?state=ignored&sort=trend"),
                .evaluate("document.querySelectorAll('tr.group').length"),
                .evaluate("document.querySelectorAll('tr.group svg.sparkline rect').length"),
                .screenshot("7-filtered.png"),
                .navigate("\(collector.baseURL)/?state=open"),
                .evaluate("document.querySelectorAll('tr.group').length"),
                // The report's diagnosis with its memory map, and the groups so diagnosed.
                .navigate("\(collector.baseURL)/reports/\(reportID)"),
                .evaluate("document.querySelector('dl.facts dd').textContent"),
                .evaluate(
                    "[...document.querySelectorAll('dl.facts dt')].find(t => t.textContent == 'Fault memory')?.nextElementSibling.textContent ?? ''"
                ),
                .screenshot("8-diagnosis.png"),
                .click("dl.facts dd a"),
                .evaluate("document.querySelectorAll('tr.group').length"),
                .evaluate("document.querySelector('select[name=diagnosis]').value"),
                .screenshot("9-diagnosed-groups.png"),
                .navigate("\(collector.baseURL)/?diagnosis=stack-overflow"),
                .evaluate("document.querySelectorAll('tr.group').length"),
            ], output: output)
        #expect(run.failed == nil, "\(run.failed ?? "")")
        #expect(run.errors.isEmpty, "script or console errors: \(run.errors)")
        try #require(run.values.count == 45, "\(run)")
        #expect(run.urls[0].hasSuffix("/groups/\(id)") && run.values[1] as? String == "open")
        #expect(run.urls[4].hasSuffix("/groups/\(id)"), "the form answers with the group page: \(run.urls[4])")
        #expect(run.values[5] as? String == "resolved")
        #expect((run.values[6] as? String)?.contains("in 1.2") == true, "\(run.values[6] ?? "")")
        #expect(run.values[9] as? String == "open")
        #expect(run.values[12] as? String == "ignored")
        let history = run.values[13] as? String ?? ""
        #expect(
            history.contains("open → resolved resolved in 1.2") && history.contains("ignored until 3 more occurrences"),
            "\(history)")
        #expect(run.values[17] as? String == "ignored", "the forged form changed nothing")
        #expect(run.values[21] as? Int == 1)
        let delivery = run.values[22] as? String ?? ""
        #expect(delivery.contains("new-group") && delivery.contains("\(id)"), "\(delivery)")
        // Charts: 24 hourly and 30 daily bars, one per version; the one occurrence (now) fills one bar.
        #expect(run.values[24] as? Int == 24 && run.values[25] as? Int == 30 && run.values[26] as? Int == 1)
        #expect(run.values[27] as? Int == 1, "\(run.values[27] ?? "")")
        #expect(run.values[30] as? Int == 1 && run.values[31] as? Int == 1, "the ignored group, with its sparkline")
        #expect(run.values[34] as? Int == 0, "no open group")
        #expect(
            run.values[36] as? String
                == "Bad pointer: nothing is mapped at 0x555600021010, 16 bytes past the end of rw-p [heap] (all groups so diagnosed)",
            "\(run.values[36] ?? "")")
        #expect(
            run.values[37] as? String
                == "in no mapping, after rw-p [heap] (ends 0x555600021000), before r-xp /usr/lib/libc.so.6 (starts 0x7f0000000000)",
            "\(run.values[37] ?? "")")
        #expect(run.values[40] as? Int == 1, "the diagnosis link lists the group")
        #expect(run.values[41] as? String == "wild-pointer", "the menu shows the filter")
        #expect(run.values[44] as? Int == 0, "no group diagnosed as a stack overflow")
        let stored = try await group()
        #expect(stored["state"] as? String == "ignored" && stored["ignoredUntilCount"] as? Int == 4)
        let changes = try await HTTP.request("\(collector.baseURL)/api/v1/groups/\(id)/history", headers: admin)
        #expect((changes.json["items"] as? [Any])?.count == 3, "\(changes.text)")
        print("web triage screenshots: \(output)")
    }
}
