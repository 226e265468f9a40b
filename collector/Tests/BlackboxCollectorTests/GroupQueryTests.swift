import BlackboxFormat
import Foundation
import Testing

@testable import BlackboxCollector

@Suite("Finding groups: queries, orders, trends")
struct GroupQueryTests {
    @Test("query parameters: sorts and states are checked, empty values ignored, LIKE wildcards taken literally")
    func parsing() throws {
        let query = try GroupQuery(
            parameters: [
                "sort": "count", "state": "regressed", "q": " pay ", "kind": "", "diagnosis": "stack-overflow",
            ])
        #expect(query.order == .count && query.state == .regressed && query.text == "pay" && query.kind == nil)
        #expect(query.diagnosis == .stackOverflow)
        #expect(query.queryString == "sort=count&state=regressed&diagnosis=stack%2Doverflow&q=pay&")
        #expect(throws: APIError.self) { try GroupQuery(parameters: ["diagnosis": "segfault"]) }
        #expect(throws: APIError.self) { try GroupQuery(parameters: ["sort": "random"]) }
        #expect(throws: APIError.self) { try GroupQuery(parameters: ["state": "closed"]) }
        #expect(throws: APIError.self) { try GroupQuery(parameters: ["q": String(repeating: "a", count: 201)]) }
        #expect(GroupQuery.likePattern(#"50%_a\b"#) == #"%50\%\_a\\b%"#)
    }

    /// A crash in `function`; the cart's is a nil unwrap (SIGILL with the runtime's message), every
    /// other one a null dereference (SIGSEGV at 0x0).
    static func report(_ function: String, version: String = "1.0", host: String = "host-a") -> CrashReport {
        function.contains("cart")
            ? Reports.crash(
                functions: [function], signal: (4, "SIGILL"), version: version, host: host,
                message: "Fatal error: Unexpectedly found nil while unwrapping an Optional value")
            : Reports.crash(functions: [function], version: version, host: host)
    }

    @Test("SVG charts: one bar per bucket, labels escaped, zero bars drawn flat")
    func charts() {
        let chart = SVGChart(
            bars: [.init(label: "1.0<script>", value: 3), .init(label: "b", value: 0), .init(label: "c", value: 6)],
            name: "chart-test")
        let svg = chart.render(caption: "x")
        #expect(svg.components(separatedBy: "<rect class=\"bar\"").count - 1 == 3)
        #expect(!svg.contains("<script>") && svg.contains("1.0&lt;script&gt;: 3"))
        #expect(svg.contains("height=\"0.0\""), "an empty bucket has no height")
        #expect(chart.sparkline().components(separatedBy: "<rect").count - 1 == 2, "sparklines skip empty buckets")
        let hours = Trends.hours(24, endingAt: Date(timeIntervalSince1970: 1_800_003_700))
        #expect(hours.labels.count == 24 && hours.labels.last == "09:00", "\(hours.labels)")
        #expect(hours.since == Date(timeIntervalSince1970: 1_800_003_600 - 23 * 3600))
        #expect(Trends.versionBars(["1.10": 1, "1.9": 5, "nightly": 2], limit: 2).map(\.label) == ["1.9", "nightly"])
    }

    @Test("filters, orders and histograms mean the same in both stores", arguments: StoreContractTests.Kind.allCases)
    func storeQueries(_ kind: StoreContractTests.Kind) async throws {
        let (store, cleanup) = try await StoreContractTests.makeStore(kind)
        defer { cleanup() }
        try await store.migrate()
        let project = try await store.createProject(name: "p").id
        let other = try await store.createProject(name: "q").id
        let scope = ProjectScope(projectID: project)
        let now = Date()
        func crash(
            _ function: String, version: String, host: String, hoursAgo: Double, in project: Int64 = project,
            trace: String? = nil
        ) async throws {
            var report = Self.report(function, version: version, host: host)
            report.scope = trace.map { ["trace-id": $0] }
            report.process.crashTime = now.addingTimeInterval(-hoursAgo * 3600)
            _ = try await store.index([StoreContractTests.newBundle(project: project, reports: [report])])
        }
        // pay: 3 old occurrences in 1.0; search: 2 in the last hours, 1.1; cart: 1, 1.1 on host b.
        for _ in 0..<3 { try await crash("shop.pay() -> ()", version: "1.0", host: "a", hoursAgo: 40) }
        for _ in 0..<2 { try await crash("shop.search_50%() -> ()", version: "1.1", host: "a", hoursAgo: 1) }
        try await crash("shop.cart() -> ()", version: "1.1", host: "b", hoursAgo: 2, trace: "4bf92f3577b34da6")
        try await crash("shop.pay() -> ()", version: "1.1", host: "a", hoursAgo: 3, in: other)

        func titles(_ parameters: [String: String]) async throws -> [String] {
            var query = try GroupQuery(parameters: parameters)
            query.now = now
            return try await store.groups(in: scope, query: query, page: Page()).map(\.title)
        }
        // (What the titles say is CrashSignatureTests' business; here they only tell the groups apart.)
        func title(_ function: String) -> String { CrashSignature.compute(Self.report(function)).title }
        let (pay, search, cart) = (
            title("shop.pay() -> ()"), title("shop.search_50%() -> ()"), title("shop.cart() -> ()")
        )
        #expect(try await titles([:]) == [search, cart, pay], "by last seen")
        #expect(try await titles(["trace": "4bf92f3577b34da6"]) == [cart], "the groups a trace touched")
        #expect(try await titles(["trace": "4bf92f3577b34da7"]).isEmpty)
        #expect(throws: APIError.self) { try GroupQuery(parameters: ["trace": "a b"]) }
        #expect(try await titles(["sort": "count"]) == [pay, search, cart])
        #expect(try await titles(["sort": "trend"]) == [search, cart, pay], "pay grew by nothing in the last day")
        #expect(try await titles(["version": "1.1", "sort": "count"]) == [search, cart], "top crashers in 1.1")
        #expect(try await titles(["host": "b"]) == [cart])
        #expect(try await titles(["q": "PAY"]) == [pay], "case-insensitive, in the frames too")
        #expect(try await titles(["q": "50%"]) == [search])
        #expect(try await titles(["q": "5_%"]).isEmpty)
        #expect(try await titles(["kind": "nonfatal"]).isEmpty)
        #expect(try await titles(["diagnosis": "nil-unwrap"]) == [cart], "diagnosed from the fatal message")
        #expect(try await titles(["diagnosis": "null-dereference"]) == [search, pay], "SIGSEGV at 0x0")
        #expect(try await titles(["diagnosis": "stack-overflow"]).isEmpty)
        let payID = try #require(
            try await store.groups(in: scope, query: try GroupQuery(parameters: ["q": "pay"]), page: Page()).first?.id)
        _ = try await store.changeStatus(groupID: payID, in: scope, to: .resolved(in: nil), actor: "a", at: now)
        #expect(try await titles(["state": "resolved"]) == [pay])
        #expect(try await titles(["state": "regressed"]).isEmpty)
        #expect(try await titles(["state": "open"]) == [search, cart])

        let searchID = try #require(
            try await store.groups(in: scope, query: try GroupQuery(parameters: ["q": "search"]), page: Page()).first?
                .id)
        let hours = Trends.hours(24, endingAt: now)
        let histogram = try await store.occurrenceHistogram(
            groupIDs: [searchID, payID, searchID], in: scope, since: hours.since, bucketSeconds: 3600, buckets: 24)
        #expect(histogram[searchID]?.reduce(0, +) == 2 && histogram[searchID]?.count == 24)
        #expect(histogram[searchID]?[22] == 2 || histogram[searchID]?[23] == 2, "\(histogram[searchID] ?? [])")
        #expect(histogram[payID] == Array(repeating: 0, count: 24), "40 hours ago is outside the window")
        let otherScope = try await store.occurrenceHistogram(
            groupIDs: [searchID], in: ProjectScope(projectID: other), since: hours.since, bucketSeconds: 3600,
            buckets: 24)
        #expect(otherScope[searchID] == Array(repeating: 0, count: 24), "another project's key sees nothing of it")
    }

    @Test("/api/v1/groups/:id/trend: 24 hourly and 30 daily counts, the current bucket last; 404 for another id")
    func trendAPI() async throws {
        try await RouterCollector.run { collector in
            let report = Reports.crash(functions: ["shop.pay() -> ()"])
            let bundle = try BundleArchive.make(app: report.app, host: "h", reports: [report])
            #expect(try await collector.upload(bundle).status == 201)
            let id = try #require(
                (try await collector.get("/api/v1/groups").json["items"] as? [[String: Any]])?.first?["id"] as? Int)
            let trend = try await collector.get("/api/v1/groups/\(id)/trend").json
            let hours = try #require(trend["hours"] as? [String: Any])
            let days = try #require(trend["days"] as? [String: Any])
            #expect(hours["bucketSeconds"] as? Int == 3600 && days["bucketSeconds"] as? Int == 86_400)
            let hourly = try #require(hours["counts"] as? [Int])
            let daily = try #require(days["counts"] as? [Int])
            #expect(hourly.count == 24 && hourly.last == 1 && hourly.reduce(0, +) == 1, "\(hourly)")
            #expect(daily.count == 30 && daily.last == 1 && daily.reduce(0, +) == 1, "\(daily)")
            #expect(try await collector.get("/api/v1/groups/\(id + 1)/trend").status == 404)
        }
    }
}
