import BlackboxFormat
import Foundation
import Testing

@testable import BlackboxCollector

/// Page models rendered with the real templates, no server: what Mustache's name lookup could get
/// wrong (a row showing its page's value under the same name) and what a page must or must not show.
@Suite("Web pages rendered from their models")
struct PageModelTests {
    let pages: PageRenderer

    init() async throws {
        pages = try await PageRenderer.loadTemplates()
    }

    static func stored(_ report: CrashReport) -> StoredReport {
        StoredReport(id: 7, bundleID: 3, groupID: 5, report: report)
    }

    @Test("a thread without a scope or a problem shows neither, though the report has a scope")
    func threadRowsKeepToThemselves() {
        var report = Reports.crash(functions: ["shop.Cart.price(at: Swift.Int) -> Swift.Int", "shop.checkout() -> ()"])
        report.scope = ["route": "POST /pay", "trace-id": "4bf92f3577b34da6a3ce929d0e0e4736"]
        report.threads = [
            .init(id: 100, name: "main", crashed: true, frameSource: "libunwind", frames: report.frames),
            .init(id: 101, name: "worker", crashed: false, frameSource: "libunwind", frames: report.frames),
            .init(
                id: 102, name: "serving", crashed: false, frameSource: "libunwind", problem: "no-answer",
                scope: ["route": "GET /cart"], frames: []),
        ]
        let html = pages.html(ReportPage(Self.stored(report), missingSymbols: []))

        let worker = html.components(separatedBy: "Thread 101 worker").dropFirst().first?
            .components(separatedBy: "</summary>").first
        #expect(worker == " (libunwind): 3 frames, in shop.Cart.price(at:)")
        let serving = html.components(separatedBy: "Thread 102 serving").dropFirst().first?
            .components(separatedBy: "</summary>").first
        #expect(serving == " (libunwind, no-answer): 0 frames; serving route GET /cart")
        #expect(html.contains("href=\"/traces/4bf92f3577b34da6a3ce929d0e0e4736\""))
        #expect(html.contains("class=\"glue-summary\""), "libc's frame stands behind a summary row")
        #expect(!html.contains("class=\"omitted\""), "nothing omitted: no empty paragraph")
        #expect(!html.contains("Fatal message"))
    }

    @Test("a crash's diagnosis is the report page's first fact; a report with no signal has none")
    func diagnosisFirst() {
        let crash = Reports.crash(functions: ["shop.checkout() -> ()"])
        let html = pages.html(ReportPage(Self.stored(crash), missingSymbols: []))
        #expect(
            html.contains(
                "<dl class=\"facts\">\n<dt>Diagnosis</dt><dd>Null pointer dereference <a href=\"/?diagnosis=null-dereference\">(all groups so diagnosed)</a></dd><dt>Kind</dt>"
            ),
            "\(html.components(separatedBy: "<dl class=\"facts\">").dropFirst().first?.prefix(300) ?? "no facts")")
        var nonfatal = crash
        nonfatal.signal = nil
        #expect(!pages.html(ReportPage(Self.stored(nonfatal), missingSymbols: [])).contains("<dt>Diagnosis</dt>"))
    }

    @Test("every signed-in page has a sign-out button, the symbols page's forms too; the sign-in page has none")
    func signOut() {
        let symbols = pages.html(
            SymbolsPage(
                symbolizer: "", csrf: "token", hasFiles: false, files: [], hasMissing: false, missing: [], next: nil))
        #expect(symbols.contains("action=\"/logout\""))
        let signIn = pages.html(SignInPage(csrf: "token", next: "/", error: nil))
        #expect(!signIn.contains("action=\"/logout\""))
        #expect(signIn.contains("name=\"csrf\" value=\"token\""))
    }

    @Test("a page that only says why nothing is shown shows no sign-in form")
    func message() {
        let html = pages.html(MessagePage(title: "Not found", error: "There is no such page in this project."))
        #expect(html.contains("<p class=\"error\">There is no such page in this project.</p>"))
        #expect(!html.contains("action=\"/login\""))
    }

    @Test("a group's latest report shows its reason, and no empty block where it has none")
    func latest() throws {
        var report = Reports.crash(functions: ["shop.checkout() -> ()"])
        report.reason = "Fatal error: Index out of range"
        let group = CrashGroup(
            id: 5, projectID: 1, signature: "sig", signatureVersion: 4, kind: "crash", title: "SIGSEGV in checkout",
            count: 2, firstSeen: Date(timeIntervalSince1970: 0), lastSeen: Date(timeIntervalSince1970: 60),
            latestReportID: 7, versions: ["1.0": 2], hosts: ["host-a": 2])
        func page(_ reason: String?) -> String {
            pages.html(
                GroupPage(
                    title: group.title, group: group, firstSeen: "", lastSeen: "", versions: "", hosts: "",
                    signatureText: "", status: .init(group, csrf: "token"),
                    charts: .init(hours: "", days: "", versions: ""), moves: [],
                    latest: .init(reportID: 7, stack: "0  0x1  shop.checkout()", reason: reason, fatalMessage: nil),
                    history: [], occurrences: []))
        }
        #expect(
            page("Fatal error: Index out of range").contains("<p class=\"reason\">Fatal error: Index out of range</p>"))
        #expect(!page(nil).contains("class=\"reason\""))
        #expect(page(nil).contains("<form method=\"post\" action=\"/groups/5/state\" class=\"resolve\">"))
    }
}
