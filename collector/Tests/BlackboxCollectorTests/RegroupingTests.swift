import BlackboxFormat
import BlackboxTestSupport
import CollectorTestSupport
import Foundation
import Testing

@testable import BlackboxCollector

/// Signature version 3's migration, against both stores: groups version 2 made take version 3; the
/// debug and release groups of one bug become one, the group found first keeping its id and triage.
@Suite("Regrouping to the current signature version (SQLite and PostgreSQL)")
struct RegroupingTests {
    typealias Kind = StoreContractTests.Kind

    @Test(
        "version 2's debug and release groups of one trap merge; other groups keep their id and state",
        arguments: Kind.allCases)
    func migration(_ kind: Kind) async throws {
        let (store, cleanup) = try await StoreContractTests.makeStore(kind)
        defer { cleanup() }
        try await store.migrate()
        let project = try await store.createProject(name: "p").id
        let scope = ProjectScope(projectID: project)
        let index = SignatureVersion3Tests.trap(
            release: "Index out of range",
            debug: "Swift/ContiguousArrayBuffer.swift:692: Fatal error: Index out of range")
        var secondDebug = index.debug
        secondDebug.id = UUID()
        var otherVersion = index.release
        otherVersion.app.version = "2.0"
        otherVersion.id = UUID()
        let unrelated = Reports.crash(functions: ["shop.Checkout.pay() -> ()"])
        for report in [index.debug, secondDebug, index.release, otherVersion, unrelated] {
            _ = try await store.index([StoreContractTests.newBundle(project: project, reports: [report])])
        }
        // Today's ingest made two version-3 groups; make them what version 2 made: the debug build's
        // group, the release build's (a second group of the same bug) and the unrelated one, all older.
        let database = try #require(store as? any SQLDatabase)
        let groups = try await store.groups(in: scope, page: Page())
        let trapGroup = try #require(groups.first { $0.count == 4 }, "\(groups.map { ($0.title, $0.count) })")
        let unrelatedGroup = try #require(groups.first { $0.count == 1 })
        let releaseReports: [Int64] = try await database.rows(
            "SELECT id FROM reports WHERE group_id = \(trapGroup.id) AND app_version IN ('1.0', '2.0') ORDER BY id"
        ).map { try $0.decode("id") }
        let reportsByKind = try await database.rows(
            "SELECT id, json FROM reports WHERE group_id = \(trapGroup.id) ORDER BY id")
        let releaseIDs = try reportsByKind.filter {
            try CrashReport.decode(try $0.decode("json") as Data).signal?.name == "SIGILL"
        }.map { try $0.decode("id") as Int64 }
        #expect(releaseIDs.count == 2 && releaseReports.count == 4)
        let now = Date()
        try await database.write(
            """
            UPDATE crash_groups SET signature = 'v2-debug', signature_version = 2, count = 2,
                title = 'SIGTRAP in shop.Cart.price(…)' WHERE id = \(trapGroup.id)
            """)
        let releaseGroup = try #require(
            try await database.write(
                """
                INSERT INTO crash_groups (project_id, signature, signature_version, signature_text, kind, title, count,
                    first_seen, last_seen, state)
                VALUES (\(project), 'v2-release', 2, 'crash | SIGILL | …', 'crash', 'SIGILL in shop.Cart.price(…)', 2,
                    \(now), \(now), 'ignored')
                RETURNING id
                """
            ).first?.decode("id") as Int64?)
        try await database.write("UPDATE reports SET group_id = \(releaseGroup) WHERE id IN (\(list: releaseIDs))")
        try await database.write(
            "UPDATE group_versions SET count = 2 WHERE group_id = \(trapGroup.id) AND app_version = '1.0'")
        try await database.write("DELETE FROM group_versions WHERE group_id = \(trapGroup.id) AND app_version = '2.0'")
        try await database.write(
            "INSERT INTO group_versions (group_id, app_version, count) VALUES (\(releaseGroup), '1.0', 1), (\(releaseGroup), '2.0', 1)"
        )
        try await database.write(
            """
            UPDATE crash_groups SET signature = 'v2-unrelated', signature_version = 2, state = 'resolved'
            WHERE id = \(unrelatedGroup.id)
            """)
        #expect(try await store.groups(in: scope, page: Page()).count == 3)

        let regrouping = RegroupingService(store: store)
        #expect(await regrouping.regroupAll() == 3)
        let after = try await store.groups(in: scope, page: Page())
        #expect(after.count == 2, "\(after.map { ($0.id, $0.title, $0.count) })")
        let merged = try #require(after.first { $0.id == trapGroup.id }, "the group found first keeps its id")
        #expect(merged.count == 4 && merged.signatureVersion == CrashSignature.version)
        #expect(merged.title == "Index out of range in shop.Cart.price(at:)")
        let versions = try await database.rows(
            "SELECT app_version, count FROM group_versions WHERE group_id = \(merged.id) ORDER BY app_version")
        #expect(
            try versions.map { "\(try $0.decode("app_version") as String)=\(try $0.decode("count") as Int)" } == [
                "1.0=3", "2.0=1",
            ])
        let latest = try #require(merged.latestReportID)
        #expect(try await database.rows("SELECT id FROM reports WHERE group_id = \(merged.id)").count == 4)
        #expect(latest > 0)
        #expect(try await store.moves(fromGroup: releaseGroup, in: scope).map(\.toGroupID) == [merged.id])
        let renamed = try #require(after.first { $0.id == unrelatedGroup.id })
        #expect(renamed.signatureVersion == CrashSignature.version && renamed.title == "SIGSEGV in shop.Checkout.pay()")
        #expect(renamed.state.rawValue == "resolved", "triage is kept")

        #expect(await regrouping.regroupAll() == 0, "nothing left: the migration runs once")
        // A new occurrence of the same bug now lands in the merged group.
        var again = index.release
        again.id = UUID()
        _ = try await store.index([StoreContractTests.newBundle(project: project, reports: [again])])
        #expect(try await store.groups(in: scope, page: Page()).first { $0.id == merged.id }?.count == 5)
    }

    @Test("a plan made before the group changed is not applied", arguments: Kind.allCases)
    func stalePlan(_ kind: Kind) async throws {
        let (store, cleanup) = try await StoreContractTests.makeStore(kind)
        defer { cleanup() }
        try await store.migrate()
        let project = try await store.createProject(name: "p").id
        _ = try await store.index([
            StoreContractTests.newBundle(project: project, reports: [Reports.crash(functions: ["shop.f() -> ()"])])
        ])
        let group = try #require(try await store.groups(in: ProjectScope(projectID: project), page: Page()).first)
        let database = try #require(store as? any SQLDatabase)
        try await database.write("UPDATE crash_groups SET signature_version = 2 WHERE id = \(group.id)")
        let stale = RegroupPlan(groupID: group.id, reportIDs: [], reports: [])
        #expect(try await store.regroup(stale) == false, "the group has a report the plan did not see")
        #expect(await RegroupingService(store: store).regroupAll() == 1)
    }
}
