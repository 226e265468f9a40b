import BlackboxFormat
import BlackboxTestSupport
import CollectorTestSupport
import Foundation
import Testing

@testable import BlackboxCollector

/// The storage contract, run against both stores: the embedded SQLite one and PostgreSQL (a real
/// server, see `PostgresServer`). Whatever the collector relies on is checked here once for both.
@Suite("Storage contract (SQLite and PostgreSQL)")
struct StoreContractTests {
    enum Kind: String, CaseIterable, Sendable, CustomTestStringConvertible {
        case sqlite, postgres
        var testDescription: String { rawValue }
    }

    /// A migrated, empty store with one project; `cleanup` removes what it made.
    static func makeStore(_ kind: Kind) async throws -> (store: any CollectorStore, cleanup: @Sendable () -> Void) {
        switch kind {
        case .sqlite:
            let directory = TemporaryDirectory(prefix: "store-contract")
            return (try SQLiteStore(path: "\(directory.path)/collector.sqlite"), { directory.remove() })
        case .postgres:
            return (try PostgresStore(url: try await PostgresServer.makeDatabase()), {})
        }
    }

    static func newBundle(
        project: Int64, uploadID: String? = UUID().uuidString.lowercased(), sha256: String = UUID().uuidString,
        reports: [CrashReport] = [], logs: Int = 0, receivedAt: Date = Date()
    ) -> NewBundle {
        let files =
            reports.map { InspectedFile(path: "reports/\($0.id).json", kind: .report, size: 10, sha256: "r") }
            + (0..<logs).map { InspectedFile(path: "logs/app\($0).log", kind: .log, size: 10, sha256: "l\($0)") }
        return NewBundle(
            projectID: project, uploadID: uploadID, sha256: sha256, size: 100, blob: "blob-\(sha256)", manifest: nil,
            files: files, reports: reports, receivedAt: receivedAt)
    }

    @Test(
        "hostile strings (NUL, a 100 KB function name) go through inspection into either store, bounded",
        arguments: Kind.allCases)
    func hostileStringsAreStoredSanitized(_ kind: Kind) async throws {
        let (store, cleanup) = try await Self.makeStore(kind)
        defer { cleanup() }
        try await store.migrate()
        let project = try await store.createProject(name: "p").id
        let longName = (0..<100_000).map { _ in String(UnicodeScalar(UInt8.random(in: 97...122))) }.joined()
        var report = Reports.crash(functions: ["shop.a\0b() -> ()", longName], host: "web\01", message: "boom\0")
        report.app.name = "sh\0p"
        report.app.version = "1.\00"
        report.reason = "bad\0reason"
        report.metadata = ["k\0ey": "v\0alue"]
        let zip = try BundleArchive.make(app: report.app, host: "h\0st", reports: [report])
        let limits = IngestLimits()
        let inspection = try BundleInspector(limits: limits).inspect(bytes: zip)
        let sanitized = try #require(inspection.reports.first)
        #expect(sanitized.app.name == "sh\u{FFFD}p" && sanitized.host.name == "web\u{FFFD}1")
        #expect(inspection.manifest?.host == "h\u{FFFD}st")
        #expect(sanitized.frames[2].symbols.first?.function.hasSuffix(FieldSanitizer.cutMarker) == true)

        var new = Self.newBundle(project: project, reports: inspection.reports)
        new.manifest = inspection.manifest
        let outcomes = try await store.index([new])
        guard case .stored = outcomes.first else {
            Issue.record("not stored: \(outcomes)")
            return
        }
        let group = try #require(try await store.groups(in: ProjectScope(projectID: project), page: Page()).first)
        #expect(group.title.contains("shop.a\u{FFFD}b("), "\(group.title)")
        #expect(group.versions.keys.contains("1.\u{FFFD}0") && group.hosts.keys.contains("web\u{FFFD}1"))
        let latest = try #require(group.latestReportID)
        let stored = try #require(try await store.report(id: latest, in: ProjectScope(projectID: project)))
        #expect(stored.report.reason == "bad\u{FFFD}reason" && stored.report.metadata["k\u{FFFD}ey"] == "v\u{FFFD}alue")
        let function = try #require(stored.report.frames[2].symbols.first).function
        #expect(function.utf8.count <= limits.maxFieldBytes)
    }

    @Test("reports are found by their trace id, in their project only", arguments: Kind.allCases)
    func reportsByTrace(_ kind: Kind) async throws {
        let (store, cleanup) = try await Self.makeStore(kind)
        defer { cleanup() }
        try await store.migrate()
        let project = try await store.createProject(name: "shop").id
        let other = try await store.createProject(name: "other").id
        func report(_ function: String, trace: String?, at time: Date) -> CrashReport {
            var report = Reports.crash(functions: [function])
            report.process.crashTime = time
            report.scope = trace.map { ["trace-id": $0] }
            return report
        }
        let now = Date()
        _ = try await store.index([
            Self.newBundle(
                project: project,
                reports: [
                    report("shop.b() -> ()", trace: "t-1", at: now),
                    report("shop.a() -> ()", trace: "t-1", at: now - 5),
                    report("shop.c() -> ()", trace: "t-2", at: now), report("shop.d() -> ()", trace: nil, at: now),
                    report("shop.e() -> ()", trace: String(repeating: "x", count: 65), at: now),
                ]),
            Self.newBundle(project: other, reports: [report("shop.a() -> ()", trace: "t-1", at: now)]),
        ])
        let scope = ProjectScope(projectID: project)
        let traced = try await store.reports(traceID: "t-1", in: scope, page: Page())
        #expect(traced.map(\.reason) == [nil, nil] && traced.count == 2, "only this project's, oldest first")
        #expect(traced.first.map { $0.occurredAt.timeIntervalSince(now) < -4 } == true)
        #expect(Set(traced.map(\.groupID)).count == 2)
        #expect(try await store.reports(traceID: "t-2", in: scope, page: Page()).count == 1)
        #expect(try await store.reports(traceID: String(repeating: "x", count: 65), in: scope, page: Page()).isEmpty)
        #expect(try await store.reports(traceID: "t-1", in: ProjectScope(projectID: other), page: Page()).count == 1)
    }

    @Test("migrations are idempotent; projects and keys: create, authenticate, revoke", arguments: Kind.allCases)
    func projectsAndKeys(_ kind: Kind) async throws {
        let (store, cleanup) = try await Self.makeStore(kind)
        defer { cleanup() }
        try await store.migrate()
        try await store.migrate()
        try await store.ping()
        let project = try await store.createProject(name: "shop")
        #expect(try await store.projects().map(\.name) == ["shop"])
        let key = try await store.createKey(projectID: project.id, kind: .ingest, secret: "bbx_ingest_secret1")
        #expect(try await store.authenticate(secret: "bbx_ingest_secret1")?.id == key.id)
        #expect(try await store.authenticate(secret: "wrong") == nil)
        #expect(try await store.revokeKey(id: key.id))
        #expect(try await !store.revokeKey(id: key.id))
        #expect(try await store.authenticate(secret: "bbx_ingest_secret1") == nil)
        #expect(try await store.keys().first?.revokedAt != nil)
        let symbols = try await store.createKey(projectID: project.id, kind: .symbols, secret: "bbx_symbols_secret")
        let authenticated = try await store.authenticate(secret: "bbx_symbols_secret")
        #expect(authenticated?.id == symbols.id && authenticated?.kind == .symbols)
    }

    /// A report named from the symbol table only (as a stripped binary names itself): the trap in
    /// the app's image `ab` (frame 0, as in optimized Swift), called from the system library `cd`.
    static func symbolTableReport(version: String, host: String) -> CrashReport {
        // A Swift trap: SIGILL, named only once the trap's frame is.
        var report = Reports.crash(
            functions: ["shop.checkout() -> ()"], signal: (4, "SIGILL"), version: version, host: host)
        report.signal?.code = 2
        report.frames = Array(report.frames.dropFirst()) + [report.frames[0]]
        for index in report.frames.indices {
            report.frames[index].index = index
            report.frames[index].symbols = report.frames[index].symbols.map { .init(function: $0.function) }
            report.frames[index].symbolication = .symbolTable
        }
        return report
    }

    /// The report once the collector symbolicated its `ab` frames from debug info.
    static func symbolicationUpdate(for pending: PendingReport) throws -> SymbolicationUpdate {
        let report = try CrashReport.decode(pending.json)
        let lookups = ReportSymbols.lookups(in: report, buildID: "ab")
        let symbols = Dictionary(
            uniqueKeysWithValues: lookups.map {
                (
                    $0.frame,
                    [
                        CrashReport.Symbol(function: "Swift runtime failure: Index out of range", inlined: true),
                        CrashReport.Symbol(function: "shop.checkout() -> ()", file: "Shop.swift", line: 12),
                    ]
                )
            })
        let symbolicated = ReportSymbols.applying(symbols, from: "shop.debug", buildID: "ab", to: report)
        return SymbolicationUpdate(
            report: pending, json: try CrashReport.makeEncoder().encode(symbolicated), reason: symbolicated.reason,
            diagnosis: symbolicated.diagnosis?.kind.rawValue, signature: CrashSignature.compute(symbolicated),
            kind: symbolicated.kind.rawValue, occurredAt: symbolicated.process.crashTime,
            versionKey: symbolicated.versionKey, hostKey: symbolicated.hostKey, resolvedBuildIDs: ["ab"],
            complete: false)
    }

    @Test(
        "symbolication moves each report to its new group once: counts and tallies exact, the old group says where they went",
        arguments: Kind.allCases)
    func symbolicationRegroupsExactlyOnce(_ kind: Kind) async throws {
        let (store, cleanup) = try await Self.makeStore(kind)
        defer { cleanup() }
        try await store.migrate()
        let project = try await store.createProject(name: "shop").id
        let scope = ProjectScope(projectID: project)
        _ = try await store.index([
            Self.newBundle(project: project, reports: [Self.symbolTableReport(version: "1.0", host: "a")]),
            Self.newBundle(project: project, reports: [Self.symbolTableReport(version: "1.0", host: "b")]),
            Self.newBundle(project: project, reports: [Self.symbolTableReport(version: "1.1", host: "b")]),
        ])
        let before = try #require(try await store.groups(in: scope, page: Page()).first)
        #expect(before.count == 3)
        func diagnosed(_ kind: CrashDiagnosis.Kind) async throws -> [Int64] {
            var query = GroupQuery()
            query.diagnosis = kind
            return try await store.groups(in: scope, query: query, page: Page()).map(\.id)
        }
        #expect(try await diagnosed(.illegalInstruction) == [before.id], "a trap with no Swift text yet")
        let pending = try await store.pendingSymbolication(projectID: project, at: Date(), limit: 10)
        #expect(pending.count == 3)
        #expect(try await store.pendingSymbolicationCount() == 3)
        #expect(try await store.reportCounts(buildIDs: ["ab", "cd", "zz"], in: scope) == ["ab": 3, "cd": 3])
        #expect(try await store.missingSymbols(in: scope, page: Page()).map(\.buildID).sorted() == ["ab", "cd"])

        let updates = try pending.map(Self.symbolicationUpdate)
        for update in updates { #expect(try await store.applySymbolication(update)) }
        for update in updates { #expect(try await !store.applySymbolication(update), "applied twice") }

        let groups = try await store.groups(in: scope, page: Page())
        #expect(groups.count == 1, "the emptied group leaves the list: \(groups.map(\.title))")
        let after = try #require(groups.first)
        #expect(after.id != before.id && after.count == 3)
        #expect(after.title.contains("checkout"))
        #expect(after.versions == ["1.0": 2, "1.1": 1] && after.hosts == ["a": 1, "b": 2])
        #expect(try await diagnosed(.indexOutOfRange) == [after.id], "the trap's frame names its check")
        #expect(try await diagnosed(.illegalInstruction).isEmpty)
        let emptied = try #require(try await store.group(id: before.id, in: scope))
        #expect(emptied.count == 0 && emptied.versions.isEmpty && emptied.hosts.isEmpty)
        #expect(emptied.latestReportID == nil)
        #expect(try await store.moves(fromGroup: before.id, in: scope).map(\.toGroupID) == [after.id])
        #expect(try await store.moves(fromGroup: before.id, in: scope).first?.count == 3)
        #expect(try await store.moves(fromGroup: before.id, in: ProjectScope(projectID: project + 1)).isEmpty)
        let stored = try #require(try await store.report(id: pending[0].id, in: scope))
        #expect(stored.groupID == after.id)
        #expect(stored.report.reason == "Swift runtime failure: Index out of range")
        #expect(try await store.occurrences(groupID: after.id, in: scope, page: Page()).count == 3)
        #expect(try await store.pendingSymbolication(projectID: project, at: Date(), limit: 10).isEmpty)

        // `ab` is resolved; `cd` (the system library) is still missing until its symbols arrive.
        #expect(try await store.missingSymbols(in: scope, page: Page()).map(\.buildID) == ["cd"])
        #expect(try await store.requestSymbolication(projectID: project, buildID: "ab") == 0)
        #expect(try await store.requestSymbolication(projectID: project, buildID: "cd") == 3)
        let requeued = try await store.pendingSymbolication(projectID: project, at: Date(), limit: 10)
        #expect(requeued.map(\.id) == pending.map(\.id) && requeued.allSatisfy { $0.epoch > pending[0].epoch })
        // A result computed before the report was queued again is not applied.
        var stale = updates[0]
        stale.report.epoch = requeued[0].epoch - 1
        #expect(try await !store.applySymbolication(stale))
        try await store.markSymbolsMissing([pending[1]])  // an old epoch: stays pending
        #expect(try await store.pendingSymbolicationCount() == 3)
        try await store.markSymbolsMissing(requeued)
        #expect(try await store.pendingSymbolicationCount() == 0)
        _ = try await store.addSymbolFile(
            NewSymbolFile(
                projectID: project, buildID: "cd", fileName: "libc.debug", size: 1, sha256: "x", blob: "x",
                hasDebugInfo: true, hasCode: false, uploadedAt: Date()))
        #expect(try await store.missingSymbols(in: scope, page: Page()).isEmpty)
    }

    @Test(
        "symbol files: usage per project, deletion of one file or all of a build-id, blobs other records still reference",
        arguments: Kind.allCases)
    func symbolFileDeletion(_ kind: Kind) async throws {
        let (store, cleanup) = try await Self.makeStore(kind)
        defer { cleanup() }
        try await store.migrate()
        let project = try await store.createProject(name: "shop").id
        let other = try await store.createProject(name: "other").id
        let scope = ProjectScope(projectID: project)
        func add(_ projectID: Int64, _ buildID: String, _ sha256: String, size: Int64) async throws {
            _ = try await store.addSymbolFile(
                NewSymbolFile(
                    projectID: projectID, buildID: buildID, fileName: "\(sha256).debug", size: size, sha256: sha256,
                    blob: "blob-\(sha256)", hasDebugInfo: true, hasCode: false, uploadedAt: Date()))
        }
        try await add(project, "ab", "one", size: 10)
        try await add(project, "ab", "two", size: 20)
        try await add(project, "cd", "three", size: 30)
        try await add(other, "ab", "one", size: 10)
        #expect(try await store.symbolUsage(projectID: project) == SymbolUsage(files: 3, bytes: 60))
        #expect(try await store.symbolUsage(projectID: other + 1) == SymbolUsage(files: 0, bytes: 0))

        let one = try await store.deleteSymbolFiles(buildID: "ab", sha256: "two", in: scope)
        #expect(one.map(\.sha256) == ["two"])
        #expect(try await store.deleteSymbolFiles(buildID: "ab", sha256: "two", in: scope).isEmpty)
        let all = try await store.deleteSymbolFiles(buildID: "ab", sha256: nil, in: scope)
        #expect(all.map(\.sha256) == ["one"])
        #expect(try await store.symbolFiles(buildIDs: ["ab", "cd"], in: scope).map(\.sha256) == ["three"])
        #expect(try await store.symbolFiles(buildIDs: ["ab"], in: ProjectScope(projectID: other)).count == 1)
        // The other project's record keeps its blob; the deleted one's is free.
        #expect(
            try await store.referencedSymbolBlobs(["blob-one", "blob-two", "blob-three"]) == ["blob-one", "blob-three"])
        #expect(try await store.symbolUsage(projectID: project) == SymbolUsage(files: 1, bytes: 30))
    }

    @Test(
        "symbolication attempts are bounded and stored: retried after a delay, then failed with the reason; a debug file's failures count up; late symbols start the count again",
        arguments: Kind.allCases)
    func symbolicationAttemptsAreBounded(_ kind: Kind) async throws {
        let (store, cleanup) = try await Self.makeStore(kind)
        defer { cleanup() }
        try await store.migrate()
        let project = try await store.createProject(name: "shop").id
        let other = try await store.createProject(name: "other").id
        let scope = ProjectScope(projectID: project)
        _ = try await store.index([
            Self.newBundle(project: project, reports: [Self.symbolTableReport(version: "1.0", host: "a")]),
            Self.newBundle(project: other, reports: [Self.symbolTableReport(version: "1.0", host: "a")]),
        ])
        let now = Date()
        #expect(try await store.projectsDueForSymbolication(at: now).sorted() == [project, other])
        let pending = try #require(try await store.pendingSymbolication(projectID: project, at: now, limit: 10).first)
        #expect(pending.projectID == project)
        #expect(try await store.report(id: pending.id, in: scope)?.symbolication?.state == .pending)

        // A failed attempt: not due until its retry time, then due again, still pending.
        try await store.symbolicationFailed(
            pending, reason: "timed out", retryAt: now.addingTimeInterval(60), maxAttempts: 3)
        #expect(try await store.projectsDueForSymbolication(at: now) == [other])
        #expect(try await store.pendingSymbolication(projectID: project, at: now, limit: 10).isEmpty)
        let later = now.addingTimeInterval(61)
        #expect(
            try await store.pendingSymbolication(projectID: project, at: later, limit: 10).map(\.id) == [pending.id])
        var stored = try #require(try await store.report(id: pending.id, in: scope)?.symbolication)
        #expect(stored.state == .pending && stored.attempts == 1 && stored.failure == nil)

        // The last attempt gives up: failed, with the reason, and no longer due.
        for _ in 0..<2 {
            try await store.symbolicationFailed(pending, reason: "timed out again", retryAt: now, maxAttempts: 3)
        }
        stored = try #require(try await store.report(id: pending.id, in: scope)?.symbolication)
        #expect(stored.state == .failed && stored.attempts == 3 && stored.failure == "timed out again", "\(stored)")
        #expect(try await store.pendingSymbolication(projectID: project, at: later, limit: 10).isEmpty)
        try await store.symbolicationFailed(pending, reason: "once more", retryAt: now, maxAttempts: 3)
        #expect(try await store.report(id: pending.id, in: scope)?.symbolication?.attempts == 3, "no longer pending")

        // New symbols for one of its images: pending again, the attempts forgotten.
        #expect(try await store.requestSymbolication(projectID: project, buildID: "ab") == 1)
        stored = try #require(try await store.report(id: pending.id, in: scope)?.symbolication)
        #expect(stored.state == .pending && stored.attempts == 0 && stored.failure == nil, "\(stored)")

        // A debug file's failed lookups count up and are read back with the file.
        let (file, _) = try await store.addSymbolFile(
            NewSymbolFile(
                projectID: project, buildID: "ab", fileName: "app.debug", size: 1, sha256: "x", blob: "x",
                hasDebugInfo: true, hasCode: false, uploadedAt: Date()))
        #expect(file.symbolizerFailures == 0)
        #expect(try await store.recordSymbolizerFailure(fileID: file.id) == 1)
        #expect(try await store.recordSymbolizerFailure(fileID: file.id) == 2)
        #expect(try await store.symbolFiles(buildIDs: ["ab"], in: scope).first?.symbolizerFailures == 2)

        // A result that leaves a failed file out: the report is failed, with the reason.
        let requeued = try #require(try await store.pendingSymbolication(projectID: project, at: now, limit: 10).first)
        var update = try Self.symbolicationUpdate(for: requeued)
        update.failure = "llvm-symbolizer failed 3 times on app.debug"
        #expect(try await store.applySymbolication(update))
        stored = try #require(try await store.report(id: pending.id, in: scope)?.symbolication)
        #expect(stored.state == .failed && stored.failure == update.failure, "\(stored)")
    }

    @Test(
        "symbol files: one record per build-id and bytes, found by build-id, scoped to the project",
        arguments: Kind.allCases)
    func symbolFiles(_ kind: Kind) async throws {
        let (store, cleanup) = try await Self.makeStore(kind)
        defer { cleanup() }
        try await store.migrate()
        let shop = ProjectScope(projectID: try await store.createProject(name: "shop").id)
        let other = ProjectScope(projectID: try await store.createProject(name: "other").id)
        func file(_ buildID: String, sha256: String, in scope: ProjectScope, debugInfo: Bool = true) -> NewSymbolFile {
            NewSymbolFile(
                projectID: scope.projectID, buildID: buildID, fileName: "shop.debug", size: 10, sha256: sha256,
                blob: "\(sha256.prefix(2))/\(sha256).elf", hasDebugInfo: debugInfo, hasCode: !debugInfo,
                uploadedAt: Date())
        }
        let first = try await store.addSymbolFile(file("aabb", sha256: "s1", in: shop))
        #expect(first.created && first.record.buildID == "aabb" && first.record.hasDebugInfo)
        let again = try await store.addSymbolFile(file("aabb", sha256: "s1", in: shop))
        #expect(!again.created && again.record == first.record)
        // The binary of the same build: a second record for the build-id.
        let binary = try await store.addSymbolFile(file("aabb", sha256: "s2", in: shop, debugInfo: false))
        #expect(binary.created && binary.record.hasCode)
        // Two uploads of the same new file at once: one record, created once.
        let racing = try await withThrowingTaskGroup(of: Bool.self) { group in
            for _ in 0..<4 {
                group.addTask { try await store.addSymbolFile(file("ccdd", sha256: "s3", in: shop)).created }
            }
            return try await group.reduce(into: [Bool]()) { $0.append($1) }
        }
        #expect(racing.filter { $0 }.count == 1)
        #expect(
            try await store.symbolFiles(buildIDs: ["aabb", "eeff"], in: shop).map(\.sha256).sorted() == ["s1", "s2"])
        #expect(try await store.symbolFiles(in: shop, page: Page()).count == 3)
        #expect(try await store.symbolFiles(buildIDs: ["aabb"], in: other).isEmpty)
        #expect(try await store.symbolFiles(in: other, page: Page()).isEmpty)
        #expect(try await store.symbolFiles(buildIDs: [], in: shop).isEmpty)
    }

    @Test(
        "ingest: stored once by upload id and by hash; a report id counts once; groups keep counts, versions, hosts",
        arguments: Kind.allCases)
    func ingestAndGrouping(_ kind: Kind) async throws {
        let (store, cleanup) = try await Self.makeStore(kind)
        defer { cleanup() }
        try await store.migrate()
        let project = try await store.createProject(name: "p").id
        let first = Reports.crash(functions: ["shop.Cart.total() -> Swift.Int"], version: "1.0", host: "a")
        var second = Reports.crash(functions: ["shop.Cart.total() -> Swift.Int"], version: "1.1", host: "b")
        second.process.crashTime = first.process.crashTime.addingTimeInterval(60)
        let other = Reports.crash(functions: ["shop.Payment.charge() -> ()"])

        let one = Self.newBundle(project: project, uploadID: "u1", sha256: "s1", reports: [first, other])
        let outcomes = try await store.index([
            one, Self.newBundle(project: project, uploadID: "u1", sha256: "s2"),  // same upload id
            Self.newBundle(project: project, uploadID: "u3", sha256: "s1"),  // same bytes
            Self.newBundle(project: project, uploadID: "u4", sha256: "s4", reports: [second, first]),  // first again
        ])
        #expect(
            outcomes.map { if case .stored = $0 { "stored" } else { "duplicate" } } == [
                "stored", "duplicate", "duplicate", "stored",
            ])
        #expect(outcomes[1].record.id == outcomes[0].record.id && outcomes[2].record.id == outcomes[0].record.id)
        #expect(
            try await store.existingBundle(projectID: project, uploadID: "u4", sha256: "")?.id == outcomes[3].record.id)
        #expect(
            try await store.existingBundle(projectID: project, uploadID: nil, sha256: "s1")?.id == outcomes[0].record.id
        )
        #expect(try await store.bundles(in: ProjectScope(projectID: project), page: Page()).count == 2)

        let groups = try await store.groups(in: ProjectScope(projectID: project), page: Page())
        #expect(groups.count == 2)
        let cart = try #require(groups.first { $0.title.contains("Cart") })
        #expect(cart.count == 2)
        #expect(cart.versions == ["1.0": 1, "1.1": 1])
        #expect(cart.hosts == ["a": 1, "b": 1])
        #expect(groups.first?.id == cart.id, "the most recently seen group comes first")
        let occurrences = try await store.occurrences(
            groupID: cart.id, in: ProjectScope(projectID: project), page: Page())
        #expect(occurrences.map(\.reportUUID) == [second.id, first.id].map { $0.uuidString.lowercased() })
        #expect(cart.latestReportID == occurrences.first?.reportID)
        let stored = try #require(
            try await store.report(id: occurrences[1].reportID, in: ProjectScope(projectID: project)))
        #expect(stored.report.id == first.id && stored.groupID == cart.id)
        #expect(
            try await store.occurrences(
                groupID: cart.id, in: ProjectScope(projectID: project), page: Page(limit: 1, offset: 1)
            ).map(\.reportID) == [
                occurrences[1].reportID
            ])
        #expect(try await store.group(id: cart.id, in: ProjectScope(projectID: project)) == cart)
        let files = try await store.files(bundleID: outcomes[0].record.id, in: ProjectScope(projectID: project))
        #expect(files.count == 2 && files.allSatisfy { $0.kind == .report })
    }

    @Test(
        "a report seen before, under a new signature, creates no group (it once left a zero-count group in PostgreSQL)",
        arguments: Kind.allCases)
    func duplicateReportUnderNewSignatureCreatesNoGroup(_ kind: Kind) async throws {
        let (store, cleanup) = try await Self.makeStore(kind)
        defer { cleanup() }
        try await store.migrate()
        let project = try await store.createProject(name: "p").id
        let original = Reports.crash(functions: ["shop.Cart.total() -> Swift.Int"])
        // The same report again (same id), symbolicated differently: a new signature.
        var resymbolicated = Reports.crash(functions: ["shop.Checkout.pay() -> ()"])
        resymbolicated.id = original.id
        #expect(CrashSignature.compute(original).hash != CrashSignature.compute(resymbolicated).hash)
        _ = try await store.index([Self.newBundle(project: project, reports: [original])])
        let outcomes = try await store.index([Self.newBundle(project: project, reports: [resymbolicated])])
        guard case .stored = outcomes.first else {
            Issue.record("the second bundle is new bytes and must be stored: \(outcomes)")
            return
        }
        let groups = try await store.groups(in: ProjectScope(projectID: project), page: Page())
        #expect(groups.map(\.count) == [1], "\(groups.map { ($0.title, $0.count) })")
        #expect(groups.first?.title.contains("Cart") == true)
    }

    @Test(
        "every read is confined to its project: another project's ids are not found, its lists are empty",
        arguments: Kind.allCases)
    func readsAreScopedToTheProject(_ kind: Kind) async throws {
        let (store, cleanup) = try await Self.makeStore(kind)
        defer { cleanup() }
        try await store.migrate()
        let mine = ProjectScope(projectID: try await store.createProject(name: "mine").id)
        let theirs = ProjectScope(projectID: try await store.createProject(name: "theirs").id)
        let outcome = try await store.index([
            Self.newBundle(project: theirs.projectID, reports: [Reports.crash(functions: ["shop.f() -> ()"])], logs: 1)
        ])[0]
        for file in try await store.unindexedLogFiles(limit: 10) {
            try await store.storeLogLines(fileID: file.id, lines: ["secret line"])
        }
        let group = try #require(try await store.groups(in: theirs, page: Page()).first)
        let reportID = try #require(group.latestReportID)
        let file = try #require(try await store.files(bundleID: outcome.record.id, in: theirs).first)
        #expect(try await store.searchLogs(in: theirs, query: "secret", page: Page()).count == 1)

        #expect(try await store.groups(in: mine, page: Page()).isEmpty)
        #expect(try await store.group(id: group.id, in: mine) == nil)
        #expect(try await store.occurrences(groupID: group.id, in: mine, page: Page()).isEmpty)
        #expect(try await store.report(id: reportID, in: mine) == nil)
        #expect(try await store.bundles(in: mine, page: Page()).isEmpty)
        #expect(try await store.bundle(id: outcome.record.id, in: mine) == nil)
        #expect(try await store.files(bundleID: outcome.record.id, in: mine).isEmpty)
        #expect(try await store.file(id: file.id, in: mine) == nil)
        #expect(try await store.searchLogs(in: mine, query: "secret", page: Page()).isEmpty)
    }

    @Test("a page of groups carries each group's own versions and hosts", arguments: Kind.allCases)
    func groupPageKeepsTalliesApart(_ kind: Kind) async throws {
        let (store, cleanup) = try await Self.makeStore(kind)
        defer { cleanup() }
        try await store.migrate()
        let project = try await store.createProject(name: "p").id
        let reports = (0..<30).flatMap { index in
            (0...index % 3).map { copy in
                Reports.crash(functions: ["shop.f\(index)() -> ()"], version: "\(index).\(copy)", host: "h\(index)")
            }
        }
        _ = try await store.index([Self.newBundle(project: project, reports: reports)])
        let groups = try await store.groups(in: ProjectScope(projectID: project), page: Page(limit: 100))
        #expect(groups.count == 30)
        for group in groups {
            let index = try #require(Int(group.title.split(separator: "f").last?.prefix(while: \.isNumber) ?? ""))
            let copies = index % 3 + 1
            #expect(group.count == copies)
            #expect(group.hosts == ["h\(index)": copies])
            #expect(group.versions == Dictionary(uniqueKeysWithValues: (0..<copies).map { ("\(index).\($0)", 1) }))
        }
    }

    @Test(
        "retention and an upload of the same bytes, in either interleaving, on any instance: the blob stays",
        arguments: Kind.allCases)
    func retentionRaceWithAnUploadOfTheSameBytes(_ kind: Kind) async throws {
        for retentionChecksFirst in [true, false] {
            let (store, cleanup) = try await Self.makeStore(kind)
            defer { cleanup() }
            try await store.migrate()
            let project = try await store.createProject(name: "p").id
            let scratch = TemporaryDirectory(prefix: "retention-race")
            defer { scratch.remove() }
            let directory = scratch.path
            let blobs = try DirectoryBlobStore(root: "\(directory)/blobs", temporaryDirectory: "\(directory)/tmp")
            let bytes = Data((0..<4096).map { _ in UInt8.random(in: 0...255) })
            let sha256 = BundleArchive.sha256(bytes)
            let blob = ZipBundleFormat.blobName(sha256: sha256)
            func upload() throws -> String {
                let file = try blobs.makeTemporaryFile()
                close(file.descriptor)
                try bytes.write(to: URL(fileURLWithPath: file.path))
                try blobs.commitWaitingForTheDisk([(file.path, blob, sha256, Int64(bytes.count))], fileByFile: true)
                return file.path
            }
            func bundle(receivedAt: Date) -> NewBundle {
                var new = Self.newBundle(project: project, sha256: sha256, receivedAt: receivedAt)
                new.blob = blob
                return new
            }
            // An old bundle holds the blob; retention deletes the bundle.
            blobs.releaseStandby(temporaryPath: try upload(), name: blob)
            _ = try await store.index([bundle(receivedAt: Date().addingTimeInterval(-10 * 86_400))])
            let outcome = try await store.deleteBundles(receivedBefore: Date().addingTimeInterval(-86_400))
            #expect(outcome.unreferencedBlobs == [blob])

            // Instance B receives the same bytes: the blob is there, its copy waits as a standby.
            let standby = try upload()
            #expect(FileManager.default.fileExists(atPath: standby))
            // Instance A's retention moves the blob aside...
            let aside = try #require(blobs.moveAside(blob))
            if retentionChecksFirst {
                // ...checks before B's transaction: unreferenced, deleted.
                #expect(try await store.referencedBlobs([blob]).isEmpty)
                blobs.removeAside(aside)
                _ = try await store.index([bundle(receivedAt: Date())])
                blobs.releaseStandby(temporaryPath: standby, name: blob)
            } else {
                // ...B's transaction commits first: A sees the reference and puts the blob back.
                _ = try await store.index([bundle(receivedAt: Date())])
                blobs.releaseStandby(temporaryPath: standby, name: blob)
                #expect(try await store.referencedBlobs([blob]) == [blob])
                blobs.restore(aside, as: blob)
            }
            #expect(try DirectoryBlobStore.sha256(ofFileAt: blobs.path(of: blob)) == sha256, "\(retentionChecksFirst)")
            #expect(!FileManager.default.fileExists(atPath: standby) && !FileManager.default.fileExists(atPath: aside))
        }
    }

    @Test(
        "log search: every word must match; indexing is idempotent; an indexed file is not handed out again",
        arguments: Kind.allCases)
    func logSearch(_ kind: Kind) async throws {
        let (store, cleanup) = try await Self.makeStore(kind)
        defer { cleanup() }
        try await store.migrate()
        let project = try await store.createProject(name: "p").id
        let other = try await store.createProject(name: "q").id
        _ = try await store.index([
            Self.newBundle(project: project, logs: 2), Self.newBundle(project: other, logs: 1),
        ])
        let files = try await store.unindexedLogFiles(limit: 10)
        #expect(files.count == 3)
        let lines = [
            "INFO checkout started", "ERROR payment declined card=visa", "INFO checkout done",
            "quote\"s & 'odd' (chars)",
        ]
        for file in files {
            try await store.storeLogLines(fileID: file.id, lines: lines)
            try await store.storeLogLines(fileID: file.id, lines: lines)  // again: no duplicates
        }
        #expect(try await store.unindexedLogFiles(limit: 10).isEmpty)
        let mine = Set(files.filter { $0.bundleID != files.last?.bundleID }.map(\.id))
        let checkout = try await store.searchLogs(in: ProjectScope(projectID: project), query: "checkout", page: Page())
        #expect(checkout.count == 4)  // two lines in each of the project's two files
        #expect(Set(checkout.map(\.fileID)) == mine)
        let both = try await store.searchLogs(in: ProjectScope(projectID: project), query: "payment visa", page: Page())
        #expect(both.count == 2 && both.allSatisfy { $0.lineNumber == 2 && $0.text.contains("declined") })
        #expect(
            try await store.searchLogs(in: ProjectScope(projectID: project), query: "payment mastercard", page: Page())
                .isEmpty)
        #expect(
            try await store.searchLogs(in: ProjectScope(projectID: project), query: "\"odd\"", page: Page()).count == 2)
        #expect(try await store.searchLogs(in: ProjectScope(projectID: project), query: "   ", page: Page()).isEmpty)
        #expect(
            try await store.searchLogs(
                in: ProjectScope(projectID: project), query: "checkout", page: Page(limit: 1, offset: 1)
            ).count
                == 1)
    }

    /// Issue 49, item 5: PostgreSQL's `simple` parser read `-9ed0…` in `req-9ed0…` as a signed
    /// number, and 9 of 12 random request ids were not found whole.
    @Test("log search finds request, trace and UUID ids whole", arguments: Kind.allCases)
    func logSearchFindsIDs(_ kind: Kind) async throws {
        let (store, cleanup) = try await Self.makeStore(kind)
        defer { cleanup() }
        try await store.migrate()
        let project = try await store.createProject(name: "p").id
        _ = try await store.index([Self.newBundle(project: project, logs: 1)])
        let file = try #require(try await store.unindexedLogFiles(limit: 1).first)
        var generator = SystemRandomNumberGenerator()
        let ids =
            (0..<12).map { _ in "req-" + String(UInt64.random(in: 0...UInt64.max, using: &generator), radix: 16) }
            + ["req-9ed0c1", "req-1e5", "9ed0-77aa", UUID().uuidString.lowercased()]
        try await store.storeLogLines(
            fileID: file.id, lines: ids.map { "INFO handled request_id=\($0) status=200 in 3 ms" })
        for (index, id) in ids.enumerated() {
            let hits = try await store.searchLogs(in: ProjectScope(projectID: project), query: id, page: Page())
            #expect(hits.map(\.lineNumber) == [index + 1], "\(id): \(hits.map(\.text))")
        }
    }

    @Test(
        "retention deletes old bundles with their files, occurrences and lines; groups keep their counts",
        arguments: Kind.allCases)
    func retention(_ kind: Kind) async throws {
        let (store, cleanup) = try await Self.makeStore(kind)
        defer { cleanup() }
        try await store.migrate()
        let project = try await store.createProject(name: "p").id
        let old = Date().addingTimeInterval(-10 * 86_400)
        let report = Reports.crash(functions: ["shop.f() -> ()"])
        let outcomes = try await store.index([
            Self.newBundle(project: project, sha256: "old", reports: [report], logs: 1, receivedAt: old),
            Self.newBundle(project: project, sha256: "new", logs: 1),
        ])
        let files = try await store.unindexedLogFiles(limit: 10)
        for file in files {
            try await store.storeLogLines(fileID: file.id, lines: ["needle in file \(file.id)"])
        }
        #expect(
            try await store.searchLogs(in: ProjectScope(projectID: project), query: "needle", page: Page()).count == 2)

        let retention = try await store.deleteBundles(receivedBefore: Date().addingTimeInterval(-86_400))
        #expect(retention == RetentionOutcome(deletedBundles: 1, unreferencedBlobs: ["blob-old"]))
        #expect(try await store.bundle(id: outcomes[0].record.id, in: ProjectScope(projectID: project)) == nil)
        #expect(try await store.bundle(id: outcomes[1].record.id, in: ProjectScope(projectID: project)) != nil)
        let hits = try await store.searchLogs(in: ProjectScope(projectID: project), query: "needle", page: Page())
        #expect(hits.map(\.bundleID) == [outcomes[1].record.id])
        // An indexer that read both files before the deletion stores them in one batch: the deleted
        // file's lines are skipped, the other's replace what it had.
        try await store.storeLogLines(files.map { LogFileLines(fileID: $0.id, lines: ["late \($0.id)"]) })
        let late = try await store.searchLogs(in: ProjectScope(projectID: project), query: "late", page: Page())
        #expect(late.map(\.bundleID) == [outcomes[1].record.id])
        #expect(try await store.searchLogs(in: ProjectScope(projectID: project), query: "needle", page: Page()).isEmpty)
        let group = try #require(try await store.groups(in: ProjectScope(projectID: project), page: Page()).first)
        #expect(group.count == 1 && group.latestReportID == nil)
        #expect(
            try await store.occurrences(groupID: group.id, in: ProjectScope(projectID: project), page: Page()).isEmpty)
        #expect(try await store.deleteBundles(receivedBefore: Date().addingTimeInterval(-86_400)).deletedBundles == 0)
    }

    @Test(
        "retention evicts each project's oldest bundles past its quota, and only that project's; release health older than the cutoff goes",
        arguments: Kind.allCases)
    func quotaEviction(_ kind: Kind) async throws {
        let (store, cleanup) = try await Self.makeStore(kind)
        defer { cleanup() }
        try await store.migrate()
        let busy = try await store.createProject(name: "busy").id
        let quiet = try await store.createProject(name: "quiet").id
        let now = Date()
        // Bundles' size is 100 bytes each in `newBundle`; the busy project sends five, an hour apart.
        let outcomes = try await store.index(
            (0..<5).map { index in
                Self.newBundle(
                    project: busy, sha256: "busy\(index)", receivedAt: now.addingTimeInterval(Double(index - 5) * 3600))
            } + [Self.newBundle(project: quiet, sha256: "quiet", receivedAt: now.addingTimeInterval(-6 * 3600))])
        let sizes = outcomes.map(\.record.size)
        #expect(try await store.bundleBytes(projectID: busy) == sizes.prefix(5).reduce(0, +))
        // A quota of three bundles: the two oldest of the busy project go; the quiet one's older bundle stays.
        let quota = sizes[0] * 3
        let outcome = try await store.deleteBundles(receivedBefore: .distantPast, beyondBytesPerProject: quota)
        #expect(outcome.deletedBundles == 2)
        #expect(Set(outcome.unreferencedBlobs) == ["blob-busy0", "blob-busy1"])
        #expect(try await store.bundleBytes(projectID: busy) == quota)
        #expect(try await store.bundle(id: outcomes[5].record.id, in: ProjectScope(projectID: quiet)) != nil)

        // Release health: days before the cutoff are deleted with it.
        var old = Self.newBundle(
            project: quiet, sha256: "sessions-old", receivedAt: now.addingTimeInterval(-40 * 86_400))
        old.manifest = BundleManifest(
            app: .init(name: "a", version: "0.9"), host: "h", entries: [],
            sessions: [
                SessionSummary(
                    appVersion: "0.9", clean: 3, firstStart: old.receivedAt - 3600, lastEnd: old.receivedAt - 60,
                    requests: RequestCounts(total: 1_000, serverErrors: 7, crashed: 2)),
                SessionSummary(
                    appVersion: "0.9", firstStart: old.receivedAt - 60, lastEnd: old.receivedAt - 30,
                    requests: RequestCounts(total: 500, serverErrors: 3)),
            ])
        _ = try await store.index([old])
        let release = try #require(try await store.releases(in: ProjectScope(projectID: quiet), page: Page()).first)
        #expect(release.version == "0.9" && release.sessions == 3)
        #expect(release.requests == RequestCounts(total: 1_500, serverErrors: 10, crashed: 2), "\(release.requests)")
        #expect(release.errorFreeRequestRate == 1_488.0 / 1_500 && release.crashFreeRequestRate == 1_498.0 / 1_500)
        _ = try await store.deleteBundles(
            receivedBefore: now.addingTimeInterval(-30 * 86_400), beyondBytesPerProject: .max)
        #expect(try await store.releases(in: ProjectScope(projectID: quiet), page: Page()).isEmpty)
    }

    @Test(
        "delivery losses add up per version, category and reason; past the day's rows a new one counts as other; retention drops old days",
        arguments: Kind.allCases)
    func losses(_ kind: Kind) async throws {
        let (store, cleanup) = try await Self.makeStore(kind)
        defer { cleanup() }
        try await store.migrate()
        let project = try await store.createProject(name: "p").id
        let scope = ProjectScope(projectID: project)
        let now = Date()
        func bundle(_ losses: [DeliveryLoss], at date: Date = now, _ name: String = UUID().uuidString) -> NewBundle {
            var bundle = Self.newBundle(project: project, sha256: name, receivedAt: date)
            bundle.losses = losses
            return bundle
        }
        let dropped = DeliveryLoss(appVersion: "1.0", category: "error", reason: "before_send", quantity: 2)
        _ = try await store.index([bundle([dropped]), bundle([dropped, dropped])])
        let old = DeliveryLoss(appVersion: "0.9", category: "session", reason: "network_error", quantity: 7)
        _ = try await store.index([bundle([old], at: now.addingTimeInterval(-40 * 86_400))])
        let recent = try await store.losses(in: scope, since: now.addingTimeInterval(-86_400))
        #expect(recent.map { [$0.version, $0.category, $0.reason] } == [["1.0", "error", "before_send"]])
        #expect(recent.first?.quantity == 6, "three losses of 2 each, one row")
        #expect(try await store.losses(in: scope, since: now.addingTimeInterval(-60 * 86_400)).count == 2)

        // The day's rows are bounded: a sender making up reasons fills them, then counts as other.
        // Today holds one row (before_send): these fill the rest.
        let madeUp = (0..<ReleaseLoss.maxRowsPerDay - 1).map {
            DeliveryLoss(appVersion: "1.0", category: "error", reason: "r\($0)", quantity: 1)
        }
        _ = try await store.index(
            stride(from: 0, to: madeUp.count, by: 64).map { bundle(Array(madeUp[$0..<min($0 + 64, madeUp.count)])) })
        _ = try await store.index([
            bundle([DeliveryLoss(appVersion: "1.0", category: "error", reason: "late", quantity: 4)])
        ])
        let capped = try await store.losses(in: scope, since: now.addingTimeInterval(-86_400))
        #expect(!capped.contains { $0.reason == "late" })
        #expect(capped.contains { $0.reason == "other" && $0.version == CrashGroup.otherValues && $0.quantity == 4 })

        _ = try await store.deleteBundles(
            receivedBefore: now.addingTimeInterval(-30 * 86_400), beyondBytesPerProject: .max)
        #expect(!(try await store.losses(in: scope, since: .distantPast)).contains { $0.version == "0.9" })
    }

    @Test(
        "made-up versions crowd real ones into (other) only while they keep arriving: a day later a new version counts by name",
        arguments: Kind.allCases)
    func versionCapIsRecent(_ kind: Kind) async throws {
        let (store, cleanup) = try await Self.makeStore(kind)
        defer { cleanup() }
        try await store.migrate()
        let project = try await store.createProject(name: "p").id
        let scope = ProjectScope(projectID: project)
        func bundle(_ versions: [String], at date: Date) -> NewBundle {
            var bundle = Self.newBundle(project: project, receivedAt: date)
            bundle.manifest = BundleManifest(
                app: .init(name: "a"), host: "h", entries: [],
                sessions: versions.map {
                    SessionSummary(appVersion: $0, clean: 1, firstStart: date - 3600, lastEnd: date - 60)
                })
            return bundle
        }
        let now = Date()
        let junk = (0..<ReleaseHealth.maxVersions).map { "junk-\($0)" }
        // The cap filled today: a new version today is counted under (other).
        _ = try await store.index(
            stride(from: 0, to: junk.count, by: 100).map { bundle(Array(junk[$0..<$0 + 100]), at: now) })
        _ = try await store.index([bundle(["10.0"], at: now)])
        #expect(try await store.release(version: "10.0", in: scope) == nil)
        #expect(try await store.release(version: CrashGroup.otherValues, in: scope) != nil)

        // The same junk three days ago: today's new version is counted by name.
        let (later, cleanupLater) = try await Self.makeStore(kind)
        defer { cleanupLater() }
        try await later.migrate()
        let laterProject = try await later.createProject(name: "p").id
        #expect(laterProject == project)
        let past = now.addingTimeInterval(-3 * 86_400)
        _ = try await later.index(
            stride(from: 0, to: junk.count, by: 100).map { bundle(Array(junk[$0..<$0 + 100]), at: past) })
        _ = try await later.index([bundle(["10.0"], at: now)])
        #expect(try await later.release(version: "10.0", in: scope) != nil)
        #expect(try await later.release(version: CrashGroup.otherValues, in: scope) == nil)
    }

    @Test("a group tracks at most 100 distinct versions and hosts; the rest count as (other)", arguments: Kind.allCases)
    func boundedVersionsAndHosts(_ kind: Kind) async throws {
        let (store, cleanup) = try await Self.makeStore(kind)
        defer { cleanup() }
        try await store.migrate()
        let project = try await store.createProject(name: "p").id
        let reports = (0..<(CrashGroup.maxTrackedValues + 5)).map {
            Reports.crash(functions: ["shop.f() -> ()"], version: "9.\($0)", host: "host-\($0)")
        }
        _ = try await store.index([Self.newBundle(project: project, reports: reports)])
        // A version seen before is still counted by name.
        _ = try await store.index([
            Self.newBundle(
                project: project,
                reports: [Reports.crash(functions: ["shop.f() -> ()"], version: "9.3", host: "host-3")])
        ])
        let group = try #require(try await store.groups(in: ProjectScope(projectID: project), page: Page()).first)
        #expect(group.count == reports.count + 1)
        #expect(group.versions.count == CrashGroup.maxTrackedValues + 1 && group.hosts.count == group.versions.count)
        #expect(group.versions[CrashGroup.otherValues] == 5 && group.hosts[CrashGroup.otherValues] == 5)
        #expect(group.versions["9.3"] == 2)
    }

    @Test(
        "retention keeps a blob that another project's bundle (the same bytes) still references",
        arguments: Kind.allCases)
    func retentionKeepsSharedBlobs(_ kind: Kind) async throws {
        let (store, cleanup) = try await Self.makeStore(kind)
        defer { cleanup() }
        try await store.migrate()
        let first = try await store.createProject(name: "a").id
        let second = try await store.createProject(name: "b").id
        let old = Date().addingTimeInterval(-10 * 86_400)
        _ = try await store.index([
            Self.newBundle(project: first, sha256: "same", receivedAt: old),
            Self.newBundle(project: second, sha256: "same"),
            Self.newBundle(project: first, sha256: "alone", receivedAt: old),
        ])
        let retention = try await store.deleteBundles(receivedBefore: Date().addingTimeInterval(-86_400))
        #expect(retention == RetentionOutcome(deletedBundles: 2, unreferencedBlobs: ["blob-alone"]))
        #expect(try await store.referencedBlobs(["blob-same", "blob-alone", "blob-none"]) == ["blob-same"])
    }

    @Test(
        "many concurrent ingests of the same upload store it once and all answer with its record",
        arguments: Kind.allCases)
    func concurrentDuplicates(_ kind: Kind) async throws {
        let (store, cleanup) = try await Self.makeStore(kind)
        defer { cleanup() }
        try await store.migrate()
        let project = try await store.createProject(name: "p").id
        let report = Reports.crash(functions: ["shop.f() -> ()"])
        let ids = try await withThrowingTaskGroup(of: [Int64].self) { group in
            for _ in 0..<16 {
                group.addTask {
                    try await store.index([
                        Self.newBundle(project: project, uploadID: "same", sha256: "same", reports: [report])
                    ])
                    .map(\.record.id)
                }
            }
            var all: [Int64] = []
            for try await ids in group { all += ids }
            return all
        }
        #expect(Set(ids).count == 1 && ids.count == 16)
        #expect(try await store.groups(in: ProjectScope(projectID: project), page: Page()).first?.count == 1)
    }
}

/// PostgreSQL only: what several instances share.
@Suite("PostgreSQL store: coordination between instances")
struct PostgresCoordinationTests {
    @Test("indexers on two connections claim disjoint files; a claim expires for nobody else while it lasts")
    func claimsAreDisjoint() async throws {
        let url = try await PostgresServer.makeDatabase()
        let first = try PostgresStore(url: url)
        let second = try PostgresStore(url: url)
        try await first.migrate()
        try await second.migrate()
        let project = try await first.createProject(name: "p").id
        _ = try await first.index([StoreContractTests.newBundle(project: project, logs: 10)])
        async let a = first.unindexedLogFiles(limit: 6)
        async let b = second.unindexedLogFiles(limit: 6)
        let (claimedA, claimedB) = try await (a, b)
        #expect(Set(claimedA.map(\.id)).isDisjoint(with: claimedB.map(\.id)))
        #expect(claimedA.count + claimedB.count == 10)
        #expect(try await first.unindexedLogFiles(limit: 10).isEmpty, "claimed files are not handed out again")
    }

    @Test(
        "two instances storing the same report at once, under different signatures: one occurrence, no empty group")
    func concurrentDuplicateReportsLeaveNoEmptyGroup() async throws {
        let url = try await PostgresServer.makeDatabase()
        let first = try PostgresStore(url: url)
        let second = try PostgresStore(url: url)
        try await first.migrate()
        let project = try await first.createProject(name: "p").id
        for round in 0..<20 {
            let report = Reports.crash(functions: ["shop.a\(round)() -> ()"])
            var other = Reports.crash(functions: ["shop.b\(round)() -> ()"])
            other.id = report.id
            async let a = first.index([StoreContractTests.newBundle(project: project, reports: [report])])
            async let b = second.index([StoreContractTests.newBundle(project: project, reports: [other])])
            _ = try await (a, b)
        }
        let groups = try await first.groups(in: ProjectScope(projectID: project), page: Page(limit: 100))
        #expect(groups.count == 20)
        #expect(groups.allSatisfy { $0.count == 1 }, "\(groups.filter { $0.count != 1 }.map(\.title))")
    }

    @Test(
        "two instances indexing batches that touch the same groups in opposite orders: every batch stored, each group counted right"
    )
    func oppositeOrdersDoNotFailABatch() async throws {
        let url = try await PostgresServer.makeDatabase()
        let first = try PostgresStore(url: url)
        let second = try PostgresStore(url: url)
        try await first.migrate()
        let project = try await first.createProject(name: "p").id
        // Each round: two new groups, each batch first taking one group's rows, then the other's
        // (PostgreSQL aborts one transaction of such a pair as a deadlock now and then; the store
        // runs it again).
        let rounds = 20
        for round in 0..<rounds {
            let signatures = ["shop.left\(round)() -> ()", "shop.right\(round)() -> ()"]
            func batch(_ order: [String]) -> [NewBundle] {
                order.map { StoreContractTests.newBundle(project: project, reports: [Reports.crash(functions: [$0])]) }
            }
            async let a = first.index(batch(signatures))
            async let b = second.index(batch(signatures.reversed()))
            _ = try await (a, b)
        }
        let groups = try await first.groups(in: ProjectScope(projectID: project), page: Page(limit: 200))
        #expect(groups.count == 2 * rounds)
        #expect(groups.allSatisfy { $0.count == 2 }, "\(groups.filter { $0.count != 2 }.map(\.title))")
    }

    @Test("two instances symbolicating the same reports at once: each is moved exactly once")
    func concurrentSymbolicationAppliesOnce() async throws {
        let url = try await PostgresServer.makeDatabase()
        let first = try PostgresStore(url: url)
        let second = try PostgresStore(url: url)
        try await first.migrate()
        let project = try await first.createProject(name: "p").id
        let scope = ProjectScope(projectID: project)
        _ = try await first.index(
            (0..<10).map { index in
                StoreContractTests.newBundle(
                    project: project,
                    reports: [StoreContractTests.symbolTableReport(version: "1.\(index % 3)", host: "h\(index % 2)")])
            })
        let old = try #require(try await first.groups(in: scope, page: Page()).first)
        let updates = try await first.pendingSymbolication(projectID: project, at: Date(), limit: 20).map(
            StoreContractTests.symbolicationUpdate)
        #expect(updates.count == 10)
        var applied = 0
        for update in updates {
            async let a = first.applySymbolication(update)
            async let b = second.applySymbolication(update)
            let (byFirst, bySecond) = try await (a, b)
            #expect(byFirst != bySecond, "exactly one instance applies it")
            applied += (byFirst ? 1 : 0) + (bySecond ? 1 : 0)
        }
        #expect(applied == 10)
        let groups = try await first.groups(in: scope, page: Page())
        #expect(groups.map(\.count) == [10])
        #expect(groups.first?.versions == ["1.0": 4, "1.1": 3, "1.2": 3])
        #expect(try await first.group(id: old.id, in: scope)?.count == 0)
        #expect(try await first.moves(fromGroup: old.id, in: scope).first?.count == 10)
    }

    /// A claim's ranking is read from the statement's snapshot; another instance may commit its own
    /// claim of the same rows before this one locks them. A loaded CI run once delivered two alerts
    /// twice this way. The race needs a statement descheduled between its snapshot and its lock:
    /// it shows on a loaded machine (CI runs suites in parallel), rarely on a quiet one.
    @Test("two instances claiming alert deliveries at once never claim the same one")
    func alertClaimsAreDisjoint() async throws {
        let url = try await PostgresServer.makeDatabase()
        let first = try PostgresStore(url: url)
        let second = try PostgresStore(url: url)
        try await first.migrate()
        let project = try await first.createProject(name: "p").id
        let scope = ProjectScope(projectID: project)
        for index in 0..<4 {
            _ = try await first.createWebhook(
                try NewWebhook(
                    json: Data(#"{"url": "https://hooks.example/\#(index)", "events": ["new-group"]}"#.utf8)),
                in: scope, at: Date())
        }
        _ = try await first.index(
            (0..<6).map {
                StoreContractTests.newBundle(
                    project: project, reports: [Reports.crash(functions: ["shop.f\($0)() -> ()"])])
            })
        let deliveries = 6 * 4
        var doubleClaims = 0
        var claims = 0
        for _ in 0..<150 {
            let now = Date()
            let until = now.addingTimeInterval(60)
            async let a = first.claimDueDeliveries(
                now: now, claimedUntil: until, limit: deliveries, perWebhook: 6, perProject: deliveries)
            async let b = second.claimDueDeliveries(
                now: now, claimedUntil: until, limit: deliveries, perWebhook: 6, perProject: deliveries)
            let ids = try await (a + b).map(\.0.id)
            claims += ids.count
            doubleClaims += ids.count - Set(ids).count
            // Released for the next round: due again at once.
            for id in Set(ids) {
                try await first.recordAttempt(
                    deliveryID: id, delivered: false, retryAt: Date().addingTimeInterval(-1), status: 500, error: nil,
                    at: Date())
            }
        }
        #expect(claims >= 150 * deliveries, "every round claimed every delivery between the two")
        #expect(doubleClaims == 0, "\(doubleClaims) claims of a delivery the other instance had claimed")
    }

    @Test("retention drops whole day partitions of log lines")
    func retentionDropsPartitions() async throws {
        let url = try await PostgresServer.makeDatabase()
        let store = try PostgresStore(url: url)
        try await store.migrate()
        let project = try await store.createProject(name: "p").id
        _ = try await store.index([
            StoreContractTests.newBundle(project: project, logs: 1, receivedAt: Date().addingTimeInterval(-5 * 86_400)),
            StoreContractTests.newBundle(project: project, logs: 1),
        ])
        for file in try await store.unindexedLogFiles(limit: 10) {
            try await store.storeLogLines(fileID: file.id, lines: ["line"])
        }
        func partitions() async throws -> [String] {
            var names: [String] = []
            for try await (name) in try await store.client.query(
                "SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'log_lines'::regclass ORDER BY 1"
            ).decode(String.self) {
                names.append(name)
            }
            return names
        }
        #expect(try await partitions().count == 2)
        _ = try await store.deleteBundles(receivedBefore: Date().addingTimeInterval(-86_400))
        #expect(try await partitions() == [PostgresStore.partitionName(Date().receivedDay)])
    }

    @Test("stopping the server on PostgreSQL closes its database connections (the client is one of its services)")
    func stoppingTheServerClosesItsConnections() async throws {
        let url = try await PostgresServer.makeDatabase()
        let observer = try PostgresStore(url: url)
        defer { Task { await observer.close() } }
        func others() async throws -> Int64 {
            try await withDeadline(.seconds(60), "counting the server's connections") {
                try await observer.rows(
                    """
                    SELECT count(*) AS n FROM pg_stat_activity
                    WHERE datname = current_database() AND pid <> pg_backend_pid()
                    """
                ).first?.decode("n") ?? -1
            }
        }
        let collector = try await TestCollector.start { $0.databaseURL = url }
        #expect(try await HTTP.get(collector, "/api/v1/groups").status == 200)
        #expect(try await others() > 0, "the server holds connections while it runs")
        // Once, on a loaded machine, this stop never returned and held the whole run: it fails instead.
        try await withDeadline(.seconds(120), "stopping the collector on PostgreSQL") { await collector.stop() }
        let deadline = ContinuousClock.now + .seconds(20)
        var open = try await others()
        while open > 0 && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(50))
            open = try await others()
        }
        #expect(open == 0, "connections left open after the server stopped")
    }

    @Test("closing the store waits for a transaction in flight, whose commit then succeeds")
    func closingWaitsForATransaction() async throws {
        let store = try PostgresStore(url: try await PostgresServer.makeDatabase())
        try await store.migrate()
        let (entered, release) = (DispatchSemaphore(value: 0), DispatchSemaphore(value: 0))
        let transaction = Task {
            try await store.write { connection in
                entered.signal()
                release.wait()
                return try connection.rows("SELECT 1 AS one").count
            }
        }
        try await offThePool { entered.wait() }
        let closing = Task { await store.close() }
        try await OperationsInFlightTests.waitUntil { store.operations.isClosing }
        await #expect(throws: StorageError.self) { try await store.rows("SELECT 1 AS one") }
        // Time for a close that did not wait to reach the connection (it closed it within this before).
        try await Task.sleep(for: .milliseconds(300))
        release.signal()
        // Before: the connection closed under the transaction, whose COMMIT then waited forever.
        let rows = try await withDeadline(.seconds(60), "the transaction in flight") { try await transaction.value }
        #expect(rows == 1)
        try await withDeadline(.seconds(60), "closing the store") { await closing.value }
    }

    @Test("the server on PostgreSQL: upload over HTTP, the group and the log line appear, a retry is a duplicate")
    func serverOnPostgres() async throws {
        let url = try await PostgresServer.makeDatabase()
        let collector = try await TestCollector.start { $0.databaseURL = url }
        let report = Reports.crash(functions: ["shop.Cart.total() -> Swift.Int"])
        let bundle = try BundleArchive.make(
            app: report.app, host: "h", reports: [report],
            logs: [("shop.log", Data("2026-11-22T00:00:00.000Z INFO  shop: postgres-needle\n".utf8))])
        let uploadID = UUID().uuidString
        let first = try await HTTP.upload(collector, bundle, uploadID: uploadID)
        let again = try await HTTP.upload(collector, bundle, uploadID: uploadID)
        let groups = try await HTTP.get(collector, "/api/v1/groups").json["items"] as? [[String: Any]]
        let hits = try await HTTP.searchLogs(collector.baseURL, token: collector.adminToken, query: "postgres-needle")
        await collector.stop()
        #expect(first.status == 201, "\(first.text)")
        #expect(again.status == 200 && again.json["duplicate"] as? Bool == true)
        #expect(groups?.count == 1 && groups?.first?["count"] as? Int == 1)
        #expect(hits.count == 1)
    }
}
