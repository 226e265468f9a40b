import BlackboxCompression
import BlackboxFormat
import BlackboxTestSupport
import CollectorTestSupport
import Foundation
import Testing

@testable import BlackboxCollector

@Suite("Ingest and read API over HTTP")
struct IngestTests {
    @Test("a bundle with a manifest is stored, grouped and readable through the API")
    func uploadAndRead() async throws {
        let collector = try await TestCollector.start()
        defer { Task { await collector.stop() } }
        let report = Reports.crash(
            functions: ["shop.Cart.total() -> Swift.Int", "shop.checkout() -> ()"], message: "boom")
        let log = Data("first line\nsecond line with needle-42\n".utf8)
        let bundle = try BundleArchive.make(
            app: report.app, host: "host-a", reports: [report], logs: [("shop.log", log)])
        let uploadID = UUID().uuidString
        let stored = try await HTTP.upload(collector, bundle, uploadID: uploadID)
        #expect(stored.status == 201, "\(stored.text)")
        #expect(stored.json["reports"] as? Int == 1 && stored.json["files"] as? Int == 3)
        #expect(stored.json["sha256"] as? String == BundleArchive.sha256(bundle))
        // The raw bundle is on disk under its hash, byte for byte.
        let blob = "\(collector.directory)/blobs/\(ZipBundleFormat.blobName(sha256: BundleArchive.sha256(bundle)))"
        #expect(FileManager.default.contents(atPath: blob) == bundle)
        // They hold personal data: private to the collector's user, like the database.
        for (path, mode) in [
            (collector.directory, 0o700), ("\(collector.directory)/collector.sqlite", 0o600), (blob, 0o600),
            ("\(collector.directory)/collector.sqlite-wal", 0o600),
        ] {
            var info = stat()
            #expect(stat(path, &info) == 0, "\(path)")
            #expect(Int(info.st_mode & 0o777) == mode, "\(path): \(String(info.st_mode & 0o777, radix: 8))")
        }

        let groups = try await HTTP.get(collector, "/api/v1/groups")
        #expect(groups.status == 200)
        let items = try #require(groups.json["items"] as? [[String: Any]])
        #expect(items.count == 1 && items[0]["count"] as? Int == 1)
        #expect((items[0]["title"] as? String)?.contains("shop.Cart.total") == true)
        let groupID = try #require(items[0]["id"] as? Int)
        let occurrences = try await HTTP.get(collector, "/api/v1/groups/\(groupID)/occurrences")
        let reportID = try #require((occurrences.json["items"] as? [[String: Any]])?.first?["reportID"] as? Int)
        let fetched = try await HTTP.get(collector, "/api/v1/reports/\(reportID)")
        #expect(try CrashReport.decode(fetched.body) == report)

        let bundleID = try #require(stored.json["bundleID"] as? Int)
        let files = try await HTTP.get(collector, "/api/v1/bundles/\(bundleID)/files")
        let list = try #require(try JSONSerialization.jsonObject(with: files.body) as? [[String: Any]])
        let logFile = try #require(list.first { $0["kind"] as? String == "log" })
        let download = try await HTTP.get(collector, "/api/v1/files/\(logFile["id"] as! Int)/content")
        #expect(download.body == log)

        await collector.server.indexPendingLogs()
        let search = try await HTTP.get(collector, "/api/v1/logs/search?q=needle-42")
        let hits = try #require(search.json["items"] as? [[String: Any]])
        #expect(hits.count == 1 && hits[0]["lineNumber"] as? Int == 2 && hits[0]["path"] as? String == "logs/shop.log")
    }

    @Test("a trace id is a field: the failing request's reports and log lines, found from the trace")
    func traces() async throws {
        let collector = try await TestCollector.start()
        defer { Task { await collector.stop() } }
        let trace = "4bf92f3577b34da6a3ce929d0e0e4736"
        var crash = Reports.crash(functions: ["shop.pay() -> ()"])
        crash.scope = ["route": "/pay", "trace-id": trace]
        var error = Reports.crash(functions: ["shop.refund() -> ()"])
        error.kind = .error
        error.scope = ["trace-id": trace]
        var elsewhere = Reports.crash(functions: ["shop.cart() -> ()"])
        elsewhere.scope = ["trace-id": "another-trace"]
        var hostile = Reports.crash(functions: ["shop.list() -> ()"])
        hostile.scope = ["trace-id": "' OR 1=1 --"]
        let log = Data("GET /pay trace_id=\(trace)\nGET /cart trace_id=another-trace\n".utf8)
        let bundle = try BundleArchive.make(
            app: crash.app, host: "host-a", reports: [crash, error, elsewhere, hostile], logs: [("shop.log", log)])
        #expect(try await HTTP.upload(collector, bundle).status == 201)
        await collector.server.indexPendingLogs()

        let found = try await HTTP.get(collector, "/api/v1/traces/\(trace)")
        #expect(found.status == 200, "\(found.text)")
        let reports = try #require(found.json["reports"] as? [[String: Any]])
        #expect(reports.compactMap { $0["kind"] as? String }.sorted() == ["crash", "error"], "\(reports)")
        #expect(Set(reports.compactMap { $0["groupID"] as? Int }).count == 2, "one report per group")
        let lines = try #require(found.json["logLines"] as? [[String: Any]])
        #expect(lines.count == 1 && lines.first?["lineNumber"] as? Int == 1, "\(lines)")
        let other = try await HTTP.get(collector, "/api/v1/traces/another-trace")
        #expect((other.json["reports"] as? [[String: Any]])?.count == 1)
        let unknown = try await HTTP.get(collector, "/api/v1/traces/0123")
        #expect(unknown.status == 200 && (unknown.json["reports"] as? [[String: Any]])?.isEmpty == true)
        let refused = try await HTTP.get(collector, "/api/v1/traces/a%27%20OR%201=1")
        #expect(refused.status == 400 && refused.json["error"] as? String == "invalid_trace_id", "\(refused.text)")
        // The report whose trace id is not one is stored, only not found by it.
        #expect(try await HTTP.get(collector, "/api/v1/groups").json["items"].map { ($0 as? [Any])?.count } == 4)
    }

    @Test(
        "bundles on both sides of the in-memory threshold are stored byte for byte",
        arguments: [
            1_000, BodyReceiver.inlineBytes - 2_000, BodyReceiver.inlineBytes + 1, 300_000,
        ])
    func sizesAroundTheInlineThreshold(approximateSize: Int) async throws {
        let collector = try await TestCollector.start()
        defer { Task { await collector.stop() } }
        // Random bytes do not deflate: the zip is about as large as the log.
        var generator = SystemRandomNumberGenerator()
        let log = Data((0..<approximateSize).map { _ in UInt8.random(in: 0...255, using: &generator) })
        let bundle = try BundleArchive.make(app: .init(name: "shop"), host: "h", reports: [], logs: [("big.log", log)])
        let stored = try await HTTP.upload(collector, bundle, uploadID: UUID().uuidString)
        #expect(stored.status == 201, "\(stored.text)")
        let blob = "\(collector.directory)/blobs/\(ZipBundleFormat.blobName(sha256: BundleArchive.sha256(bundle)))"
        #expect(FileManager.default.contents(atPath: blob) == bundle)
        let files = try await HTTP.get(
            collector, "/api/v1/bundles/\(try #require(stored.json["bundleID"] as? Int))/files")
        let list = try #require(try JSONSerialization.jsonObject(with: files.body) as? [[String: Any]])
        let logFile = try #require(list.first { $0["kind"] as? String == "log" }?["id"] as? Int)
        #expect(try await HTTP.get(collector, "/api/v1/files/\(logFile)/content").body == log)
    }

    @Test("the same Upload-Id or the same bytes twice store once and answer the same")
    func idempotent() async throws {
        let collector = try await TestCollector.start()
        defer { Task { await collector.stop() } }
        let bundle = try BundleArchive.make(
            app: .init(name: "shop"), host: "h", reports: [Reports.crash(functions: ["shop.a() -> ()"])])
        let uploadID = UUID().uuidString
        let first = try await HTTP.upload(collector, bundle, uploadID: uploadID)
        let again = try await HTTP.upload(collector, bundle, uploadID: uploadID)
        let sameBytes = try await HTTP.upload(collector, bundle, uploadID: UUID().uuidString)
        let noID = try await HTTP.upload(collector, bundle, uploadID: nil)
        #expect(first.status == 201)
        for repeat_ in [again, sameBytes, noID] {
            #expect(repeat_.status == 200 && repeat_.json["duplicate"] as? Bool == true)
            #expect(repeat_.json["bundleID"] as? Int == first.json["bundleID"] as? Int)
        }
        let bundles = try await HTTP.get(collector, "/api/v1/bundles")
        #expect((bundles.json["items"] as? [Any])?.count == 1)
        let groups = try await HTTP.get(collector, "/api/v1/groups")
        #expect((groups.json["items"] as? [[String: Any]])?.first?["count"] as? Int == 1, "counted once")
        #expect(try FileManager.default.contentsOfDirectory(atPath: "\(collector.directory)/tmp").isEmpty)
    }

    @Test("plain zips of logs made by the zip tool and by Python's zipfile are accepted as logs")
    func plainZips() async throws {
        let collector = try await TestCollector.start()
        defer { Task { await collector.stop() } }
        let workScratch = TemporaryDirectory(prefix: "plain")
        defer { workScratch.remove() }
        let work = workScratch.path
        try FileManager.default.createDirectory(atPath: "\(work)/logs", withIntermediateDirectories: true)
        try "made by zip: alpha-bravo\n".write(toFile: "\(work)/logs/app.log", atomically: true, encoding: .utf8)
        let zipTool = try run("/usr/bin/zip", ["-q", "-r", "\(work)/tool.zip", "logs"], in: work)
        #expect(zipTool == 0)
        let python = """
            import zipfile, sys
            with zipfile.ZipFile(sys.argv[1], "w", zipfile.ZIP_DEFLATED) as z:
                z.writestr("service.log", "made by python: charlie-delta\\n" * 3)
            """
        #expect(try run("/usr/bin/env", ["python3", "-c", python, "\(work)/python.zip"], in: work) == 0)
        for (name, word) in [("tool.zip", "alpha-bravo"), ("python.zip", "charlie-delta")] {
            let data = try Data(contentsOf: URL(fileURLWithPath: "\(work)/\(name)"))
            let response = try await HTTP.upload(collector, data)
            #expect(response.status == 201, "\(name): \(response.text)")
            await collector.server.indexPendingLogs()
            let search = try await HTTP.get(collector, "/api/v1/logs/search?q=\(word)")
            #expect((search.json["items"] as? [Any])?.isEmpty == false, "\(name) is searchable")
        }
        // As the UI's search form sends two words: `+` is a space (issue 49, item 5).
        let twoWords = try await HTTP.get(collector, "/api/v1/logs/search?q=python+charlie-delta").json
        #expect((twoWords["items"] as? [Any])?.count == 3, "\(twoWords)")
        let page = try await HTTP.get(collector, "/logs?q=python+charlie-delta")
        #expect(page.text.contains("made by python"), "\(page.text.prefix(2000))")
    }

    @Test("keys: missing, unknown, revoked and ingest-only keys get clear 401/403 reasons")
    func authentication() async throws {
        let collector = try await TestCollector.start()
        defer { Task { await collector.stop() } }
        let bundle = try BundleArchive.make(app: .init(name: "shop"), host: "h", logs: [("a.log", Data("x\n".utf8))])
        let missing = try await HTTP.upload(collector, bundle, credential: .none)
        #expect(missing.status == 401 && missing.json["error"] as? String == "missing_key")
        let wrong = try await HTTP.upload(collector, bundle, credential: .secret("bbx_ingest_nope"))
        #expect(wrong.status == 401 && wrong.json["error"] as? String == "invalid_key")
        let ingestReading = try await HTTP.get(collector, "/api/v1/groups", token: collector.ingestKey)
        #expect(ingestReading.status == 403 && ingestReading.json["error"] as? String == "forbidden")
        let anonymous = try await HTTP.request("\(collector.baseURL)/api/v1/bundles/1")
        #expect(anonymous.status == 401)

        #expect(try await HTTP.upload(collector, bundle).status == 201)
        let keys = try await collector.server.store.keys()
        let ingest = try #require(keys.first { $0.kind == .ingest })
        #expect(try await collector.server.store.revokeKey(id: ingest.id))
        try await Task.sleep(for: .milliseconds(1100))  // key lookups are cached for one second
        let revoked = try await HTTP.upload(collector, bundle, uploadID: UUID().uuidString)
        #expect(revoked.status == 401 && revoked.json["error"] as? String == "invalid_key")
    }

    @Test("the API refuses in one JSON shape, and another project's admin token finds nothing of this one")
    func oneErrorShapeAndProjectScope() async throws {
        let collector = try await TestCollector.start()
        defer { Task { await collector.stop() } }
        let report = Reports.crash(functions: ["shop.Cart.total() -> Swift.Int"])
        let bundle = try BundleArchive.make(app: report.app, host: report.host.name, reports: [report])
        #expect(try await HTTP.upload(collector, bundle).status == 201)
        let groups = try #require(try await HTTP.get(collector, "/api/v1/groups").json["items"] as? [[String: Any]])
        let groupID = try #require(groups.first?["id"] as? Int)

        let refusals: [(path: String, token: String?, status: Int, code: String)] = [
            ("/api/v1/groups/abc", collector.adminToken, 400, "invalid_id"),
            ("/api/v1/groups/999999", collector.adminToken, 404, "not_found"),
            ("/api/v1/logs/search", collector.adminToken, 400, "missing_query"),
            ("/api/v1/groups", nil, 401, "missing_key"),
            ("/api/v1/groups", "bbx_admin_nope", 401, "invalid_key"),
        ]
        for refusal in refusals {
            let response = try await HTTP.request(
                "\(collector.baseURL)\(refusal.path)",
                headers: refusal.token.map { [("Authorization", "Bearer \($0)")] } ?? [])
            #expect(response.status == refusal.status, "\(refusal.path): \(response.text)")
            #expect(Set(response.json.keys) == ["error", "message"], "\(refusal.path): \(response.text)")
            #expect(response.json["error"] as? String == refusal.code, "\(refusal.path): \(response.text)")
        }

        let store = collector.server.store
        let other = try await store.createProject(name: "other")
        let otherToken = "bbx_admin_" + UUID().uuidString
        _ = try await store.createKey(projectID: other.id, kind: .admin, secret: otherToken)
        for path in ["/api/v1/groups/\(groupID)", "/api/v1/groups/\(groupID)/occurrences"] {
            let response = try await HTTP.get(collector, path, token: otherToken)
            #expect(response.status == 404 && response.json["error"] as? String == "not_found", "\(path)")
        }
        let list = try await HTTP.get(collector, "/api/v1/groups", token: otherToken)
        #expect((list.json["items"] as? [Any])?.isEmpty == true, "\(list.text)")
    }

    @Test("grouping: the same stack in other builds groups together; another function is another group")
    func grouping() async throws {
        let collector = try await TestCollector.start()
        defer { Task { await collector.stop() } }
        let stack = [
            "specialized shop.Cart.total(Swift.Int) -> Swift.Int", "closure #1 () -> () in shop.checkout() -> ()",
        ]
        let first = Reports.crash(functions: stack, version: "1.0", host: "host-a", baseAddress: 0x5555_0000_0000)
        let second = Reports.crash(functions: stack, version: "1.1", host: "host-b", baseAddress: 0x5600_0000_0000)
        var other = Reports.crash(functions: ["shop.Payment.charge() -> ()"], version: "1.1")
        other.signal = .init(number: 4, name: "SIGILL", code: 2, codeName: "ILL_ILLOPN", faultAddress: "0x0")
        for report in [first, second, other] {
            let bundle = try BundleArchive.make(app: report.app, host: report.host.name, reports: [report])
            #expect(try await HTTP.upload(collector, bundle).status == 201)
        }
        let groups = try #require(try await HTTP.get(collector, "/api/v1/groups").json["items"] as? [[String: Any]])
        #expect(groups.count == 2)
        let cart = try #require(groups.first { ($0["title"] as? String)?.contains("Cart.total") == true })
        #expect(cart["count"] as? Int == 2)
        #expect(cart["versions"] as? [String: Int] == ["1.0": 1, "1.1": 1])
        #expect(cart["hosts"] as? [String: Int] == ["host-a": 1, "host-b": 1])
    }

    @Test("health, readiness and Prometheus metrics")
    func operations() async throws {
        let collector = try await TestCollector.start()
        defer { Task { await collector.stop() } }
        #expect(try await HTTP.request("\(collector.baseURL)/health").status == 200)
        #expect(try await HTTP.request("\(collector.baseURL)/ready").status == 200)
        _ = try await HTTP.upload(collector, Data("not a zip".utf8))
        let bundle = try BundleArchive.make(app: .init(name: "shop"), host: "h", logs: [("a.log", Data("x\n".utf8))])
        _ = try await HTTP.upload(collector, bundle)
        let metrics = try await HTTP.request("\(collector.baseURL)/metrics").text
        #expect(metrics.contains(#"blackbox_uploads_rejected_total{reason="not_a_zip"} 1"#))
        #expect(metrics.contains(#"blackbox_uploads_accepted_total{result="stored"} 1"#))
        #expect(metrics.contains("blackbox_upload_bytes_total \(bundle.count)"))
        #expect(metrics.contains("blackbox_ingest_duration_seconds_count"))
    }

    @Test(
        "a project's bundle quota: past it uploads are refused 413 quota_exceeded; retention evicts its oldest and it has room again"
    )
    func bundleQuota() async throws {
        let first = try BundleArchive.make(app: .init(name: "shop"), host: "h", logs: [("a.log", Data("one\n".utf8))])
        let second = try BundleArchive.make(app: .init(name: "shop"), host: "h", logs: [("b.log", Data("two\n".utf8))])
        let collector = try await TestCollector.start { $0.limits.maxBundleBytesPerProject = Int64(first.count) }
        defer { Task { await collector.stop() } }
        #expect(try await HTTP.upload(collector, first).status == 201)
        // The usage a project's uploads are checked against is a second old at most.
        try await Task.sleep(for: .milliseconds(1_100))
        let refused = try await HTTP.upload(collector, second)
        #expect(refused.status == 413 && refused.json["error"] as? String == "quota_exceeded", "\(refused.text)")
        #expect(refused.text.contains("maxBundleBytesPerProject"))
        let metrics = try await HTTP.request("\(collector.baseURL)/metrics").text
        #expect(metrics.contains(#"blackbox_uploads_rejected_total{reason="quota_exceeded"} 1"#))
        #expect(await collector.server.runRetention(now: Date()) == 1, "the oldest bundle past the quota goes")
        try await Task.sleep(for: .milliseconds(1_100))
        #expect(try await HTTP.upload(collector, second).status == 201)
    }

    @Test("retention deletes old bundles, their blobs and log lines, keeps group counts, gives space back")
    func retention() async throws {
        let collector = try await TestCollector.start { $0.retentionDays = 30 }
        defer { Task { await collector.stop() } }
        let bigLog = Data((0..<20_000).map { "retention line \($0) with some words\n" }.joined().utf8)
        let report = Reports.crash(functions: ["shop.old() -> ()"])
        let bundle = try BundleArchive.make(app: report.app, host: "h", reports: [report], logs: [("big.log", bigLog)])
        #expect(try await HTTP.upload(collector, bundle).status == 201)
        await collector.server.indexPendingLogs()
        let database = "\(collector.directory)/collector.sqlite"
        func databaseSize() throws -> Int { try fileSize(database) + ((try? fileSize(database + "-wal")) ?? 0) }
        let sizeBefore = try databaseSize()
        #expect(await collector.server.runRetention(now: Date()) == 0, "nothing is old yet")
        #expect(await collector.server.runRetention(now: Date().addingTimeInterval(31 * 86_400)) == 1)
        #expect((try await HTTP.get(collector, "/api/v1/bundles").json["items"] as? [Any])?.isEmpty == true)
        let blobs = try FileManager.default.subpathsOfDirectory(atPath: "\(collector.directory)/blobs").filter {
            $0.hasSuffix(".zip")
        }
        #expect(blobs.isEmpty)
        let search = try await HTTP.get(collector, "/api/v1/logs/search?q=retention")
        #expect((search.json["items"] as? [Any])?.isEmpty == true)
        let groups = try #require(try await HTTP.get(collector, "/api/v1/groups").json["items"] as? [[String: Any]])
        #expect(groups.first?["count"] as? Int == 1, "groups keep their history")
        let sizeAfter = try databaseSize()

        #expect(sizeAfter < sizeBefore / 2, "the database shrank (incremental vacuum): \(sizeBefore) -> \(sizeAfter)")
    }

    @Test("indexing is bounded per file and per bundle; what is not indexed stays downloadable")
    func indexingBudget() async throws {
        let collector = try await TestCollector.start {
            $0.limits.maxIndexedLinesPerFile = 1_000
            $0.limits.maxIndexedLinesPerBundle = 1_500
        }
        defer { Task { await collector.stop() } }
        let long = Data((0..<3_000).map { "needle a\($0) x\n" }.joined().utf8)
        let skipped = Data((0..<800).map { "needle b\($0) y\n" }.joined().utf8)
        let small = Data((0..<400).map { "needle c\($0) z\n" }.joined().utf8)
        let bundle = try BundleArchive.make(
            app: .init(name: "shop"), host: "h", logs: [("a.log", long), ("b.log", skipped), ("c.log", small)])
        let stored = try await HTTP.upload(collector, bundle)
        #expect(stored.status == 201, "\(stored.text)")
        await collector.server.indexPendingLogs()
        #expect(try await Self.hits(collector, "a999") == 1, "a.log's first 1,000 lines are indexed")
        #expect(try await Self.hits(collector, "a1000") == 0, "the rest of a.log is not")
        #expect(try await Self.hits(collector, "b5") == 0, "b.log would pass the bundle's budget (1,000 + 800 > 1,500)")
        #expect(try await Self.hits(collector, "c399") == 1, "c.log still fits (1,000 + 400)")
        let bundleID = try #require(stored.json["bundleID"] as? Int)
        let files = try await HTTP.get(collector, "/api/v1/bundles/\(bundleID)/files")
        let list = try #require(try JSONSerialization.jsonObject(with: files.body) as? [[String: Any]])
        let b = try #require(list.first { $0["path"] as? String == "logs/b.log" })
        #expect(try await HTTP.get(collector, "/api/v1/files/\(b["id"] as! Int)/content").body == skipped)
    }

    /// How many lines a search finds (-1 when the answer has no items).
    static func hits(_ collector: TestCollector, _ query: String) async throws -> Int {
        try await (HTTP.get(collector, "/api/v1/logs/search?q=\(query)").json["items"] as? [Any])?.count ?? -1
    }

    @Test("compressed logs count their real lines against the budget: many small archives are all searchable")
    func compressedLogsBudget() async throws {
        // Before, each `.gz` counted as the per-file cap: the sixth archive of an app whose uploads fell
        // behind (archives compressed, many to a bundle) was stored and never searchable.
        let collector = try await TestCollector.start {
            $0.limits.maxIndexedLinesPerFile = 1_000
            $0.limits.maxIndexedLinesPerBundle = 1_200
        }
        defer { Task { await collector.stop() } }
        func archive(_ tag: String, lines: Int) throws -> Data {
            Data(try GzipData.compress(Array((0..<lines).map { "needle \(tag)\($0) x\n" }.joined().utf8)))
        }
        var logs = try (0..<8).map { ("app.2026112\($0).log.gz", try archive("s\($0)n", lines: 40)) }
        // 8 × 40 lines (counted as the cap, the second would be past the budget); then one of 1,200,
        // which the per-file cap counts as 1,000: 1,320 is past the budget.
        logs.append(("app.20261129.log.gz", try archive("big", lines: 1_200)))
        let stored = try await HTTP.upload(
            collector, try BundleArchive.make(app: .init(name: "shop"), host: "h", logs: logs))
        #expect(stored.status == 201, "\(stored.text)")
        await collector.server.indexPendingLogs()
        for index in 0..<8 {
            #expect(try await Self.hits(collector, "s\(index)n39") == 1, "archive \(index) is searchable")
        }
        #expect(try await Self.hits(collector, "big0") == 0, "the 1,200-line archive would pass the bundle's budget")
    }

    @Test("a compressed log is inflated at ingest only when the bundle has more logs than the budget holds at the cap")
    func compressedLinesCountedOnlyWhenTheyMatter() throws {
        var limits = IngestLimits()
        limits.maxIndexedLinesPerFile = 1_000
        limits.maxIndexedLinesPerBundle = 2_000
        let inspector = BundleInspector(limits: limits)
        func lineCounts(archives: Int) throws -> [Int] {
            let logs = try (0..<archives).map { index in
                ("app.\(index).log.gz", Data(try GzipData.compress(Array(String(repeating: "line\n", count: 40).utf8))))
            }
            let inspection = try inspector.inspect(
                bytes: try BundleArchive.make(app: .init(name: "shop"), host: "h", logs: logs))
            return inspection.files.filter { $0.kind == .log }.map(\.lineCount)
        }
        // Two logs fit the budget at the cap whatever they hold: counted as the cap, not inflated.
        #expect(try lineCounts(archives: 2) == [1_000, 1_000])
        // Three could pass it: their real lines (40 and the empty last one).
        #expect(try lineCounts(archives: 3) == [41, 41, 41])
    }

    @Test("searches with control characters or too many words get a clear 400 or results, never 500")
    func hostileSearches() async throws {
        let collector = try await TestCollector.start()
        defer { Task { await collector.stop() } }
        let bundle = try BundleArchive.make(
            app: .init(name: "shop"), host: "h", logs: [("a.log", Data("alpha beta\n".utf8))])
        #expect(try await HTTP.upload(collector, bundle).status == 201)
        await collector.server.indexPendingLogs()
        let nul = try await HTTP.get(collector, "/api/v1/logs/search?q=%00")
        #expect(nul.status == 400 && nul.json["error"] as? String == "missing_query", "\(nul.text)")
        let embedded = try await HTTP.get(collector, "/api/v1/logs/search?q=alpha%00beta%22%1B")
        #expect(embedded.status == 200, "\(embedded.text)")
        let long = String(repeating: "word ", count: 200)
        let tooLong = try await HTTP.get(
            collector, "/api/v1/logs/search?q=\(long.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!)")
        #expect(tooLong.status == 400 && tooLong.json["error"] as? String == "query_too_long")
        #expect(try await HTTP.get(collector, "/logs?q=alpha%00beta").status != 500)
    }

    @Test("downloads stream many chunks byte for byte; the log viewer shows the beginning of a long log")
    func downloadsAndViewerAreBounded() async throws {
        let collector = try await TestCollector.start()
        defer { Task { await collector.stop() } }
        let long = Data(Tool.randomLines(bytes: 3 << 20).utf8)  // about 48 chunks of 64 KiB
        let bundle = try BundleArchive.make(app: .init(name: "shop"), host: "h", logs: [("long.log", long)])
        let stored = try await HTTP.upload(collector, bundle)
        #expect(stored.status == 201, "\(stored.text)")
        let bundleID = try #require(stored.json["bundleID"] as? Int)
        let files = try await HTTP.get(collector, "/api/v1/bundles/\(bundleID)/files")
        let list = try #require(try JSONSerialization.jsonObject(with: files.body) as? [[String: Any]])
        let fileID = try #require(list.first { $0["kind"] as? String == "log" }?["id"] as? Int)
        #expect(try await HTTP.get(collector, "/api/v1/files/\(fileID)/content").body == long)
        let page = try await HTTP.get(collector, "/files/\(fileID)").text
        #expect(page.contains("showing the first 20000 lines"), "the log has \(long.filter { $0 == 10 }.count) lines")
    }

    @Test("with too little disk space uploads get 503 insufficient_storage and /ready 503 disk_low")
    func lowDisk() async throws {
        let collector = try await TestCollector.start { $0.limits.minFreeBytes = Int64.max / 4 }
        defer { Task { await collector.stop() } }
        let bundle = try BundleArchive.make(app: .init(name: "shop"), host: "h", logs: [("a.log", Data("x\n".utf8))])
        let refused = try await HTTP.upload(collector, bundle)
        #expect(refused.status == 503 && refused.json["error"] as? String == "insufficient_storage", "\(refused.text)")
        #expect(refused.headers["retry-after"] == "60")
        let ready = try await HTTP.request("\(collector.baseURL)/ready")
        #expect(ready.status == 503 && ready.json["error"] as? String == "disk_low", "\(ready.text)")
        #expect(try await HTTP.request("\(collector.baseURL)/health").status == 200)
    }

    @Test("retention keeps a blob whose bytes another project uploaded too, and deletes one nobody else has")
    func retentionKeepsSharedBlobs() async throws {
        let collector = try await TestCollector.start { $0.retentionDays = 30 }
        defer { Task { await collector.stop() } }
        let store = try #require(collector.server.store as? SQLiteStore)
        let other = try await store.createProject(name: "other")
        let otherKey = "bbx_ingest_\(UUID().uuidString.lowercased())"
        _ = try await store.createKey(projectID: other.id, kind: .ingest, secret: otherKey)
        let shared = try BundleArchive.make(app: .init(name: "shop"), host: "h", logs: [("a.log", Data("same\n".utf8))])
        let alone = try BundleArchive.make(app: .init(name: "shop"), host: "h", logs: [("b.log", Data("alone\n".utf8))])
        #expect(try await HTTP.upload(collector, shared).status == 201)
        #expect(try await HTTP.upload(collector, alone).status == 201)
        #expect(try await HTTP.upload(collector, shared, credential: .secret(otherKey)).status == 201)
        // The first project's bundles are old; the other project's copy is not.
        let old = Date().addingTimeInterval(-40 * 86_400).timeIntervalSince1970
        try await store.pool.write { db in
            try db.execute(sql: "UPDATE bundles SET received_at = ? WHERE project_id <> ?", arguments: [old, other.id])
        }
        #expect(await collector.server.runRetention(now: Date()) == 2)
        func blobExists(_ bytes: Data) -> Bool {
            FileManager.default.fileExists(
                atPath: "\(collector.directory)/blobs/\(ZipBundleFormat.blobName(sha256: BundleArchive.sha256(bytes)))")
        }
        #expect(blobExists(shared), "the other project's bundle still needs it")
        #expect(!blobExists(alone))
    }
}

func fileSize(_ path: String) throws -> Int {
    (try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
}

@discardableResult
func run(_ executable: String, _ arguments: [String], in directory: String) throws -> Int32 {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    process.currentDirectoryURL = URL(fileURLWithPath: directory)
    try process.run()
    try process.waitForExit()
    return process.exitStatus
}
