import BlackboxFormat
import Foundation
import Testing

@testable import BlackboxCollector

/// Group states against both stores: the decisions are `GroupTriage`'s (GroupTriageTests); these show
/// each store reads and writes them the same way, during ingest and on request.
@Suite("Store contract: triage")
struct TriageContractTests {
    typealias Kind = StoreContractTests.Kind

    func crash(_ version: String?, receivedAt: Date, project: Int64) -> NewBundle {
        var report = Reports.crash(functions: ["shop.checkout() -> ()", "shop.main() -> ()"], version: version ?? "")
        report.app.version = version
        return StoreContractTests.newBundle(project: project, reports: [report], receivedAt: receivedAt)
    }

    @Test(
        "resolved in 1.2: 1.1 keeps it resolved, 1.2.1 regresses it once (also when two arrive at once); history and scope",
        arguments: Kind.allCases)
    func resolveAndRegress(_ kind: Kind) async throws {
        let (store, cleanup) = try await StoreContractTests.makeStore(kind)
        defer { cleanup() }
        try await store.migrate()
        let project = try await store.createProject(name: "p").id
        let other = try await store.createProject(name: "q").id
        let scope = ProjectScope(projectID: project)
        let start = Date(timeIntervalSince1970: 1_800_000_000)
        _ = try await store.index([crash("1.0", receivedAt: start, project: project)])
        let group = try #require(try await store.groups(in: scope, page: Page()).first)
        #expect(group.state == .open && group.stateChangedAt == nil)

        #expect(
            try await store.changeStatus(
                groupID: group.id, in: ProjectScope(projectID: other), to: .resolved(in: "1.2"), actor: "admin:x",
                at: start) == nil, "another project's key cannot change it")
        let resolved = try #require(
            try await store.changeStatus(
                groupID: group.id, in: scope, to: .resolved(in: "1.2"), actor: "admin:bbx_adm", at: start))
        #expect(resolved.state == .resolved && resolved.resolvedIn == "1.2" && resolved.stateChangedAt == start)

        _ = try await store.index([crash("1.1", receivedAt: start + 10, project: project)])
        _ = try await store.index([crash(nil, receivedAt: start + 15, project: project)])
        #expect(try await store.group(id: group.id, in: scope)?.state == .resolved)
        // Two instances (or two batches) storing a 1.2.1 occurrence at once: one regression.
        async let first = store.index([crash("1.2.1", receivedAt: start + 20, project: project)])
        async let second = store.index([crash("1.2.1", receivedAt: start + 20, project: project)])
        _ = try await (first, second)
        let regressed = try #require(try await store.group(id: group.id, in: scope))
        #expect(regressed.state == .regressed && regressed.resolvedIn == nil && regressed.count == 5)

        let history = try await store.statusHistory(groupID: group.id, in: scope)
        #expect(history.map(\.to) == [.resolved, .regressed], "\(history)")
        #expect(history.first?.actor == "admin:bbx_adm" && history.first?.detail == "resolved in 1.2")
        #expect(history.last?.actor == "collector" && history.last?.detail == "seen in 1.2.1")
        #expect(history.last?.at == start + 20)
        #expect(try await store.statusHistory(groupID: group.id, in: ProjectScope(projectID: other)).isEmpty)
        // The same request twice records once.
        _ = try await store.changeStatus(groupID: group.id, in: scope, to: .open, actor: "admin:a", at: start + 30)
        _ = try await store.changeStatus(groupID: group.id, in: scope, to: .open, actor: "admin:a", at: start + 31)
        #expect(try await store.statusHistory(groupID: group.id, in: scope).count == 3)
    }

    @Test(
        "ignored until 3 more occurrences reopens on the third; resolved in the next version; nightlies by first seen",
        arguments: Kind.allCases)
    func ignoreAndVersionOrder(_ kind: Kind) async throws {
        let (store, cleanup) = try await StoreContractTests.makeStore(kind)
        defer { cleanup() }
        try await store.migrate()
        let project = try await store.createProject(name: "p").id
        let scope = ProjectScope(projectID: project)
        let start = Date(timeIntervalSince1970: 1_800_000_000)
        _ = try await store.index([crash("nightly-a", receivedAt: start, project: project)])
        _ = try await store.index([crash("nightly-b", receivedAt: start + 100, project: project)])
        let id = try #require(try await store.groups(in: scope, page: Page()).first?.id)

        let ignored = try #require(
            try await store.changeStatus(
                groupID: id, in: scope, to: .ignored(moreOccurrences: 3, until: nil), actor: "admin:a", at: start + 200)
        )
        #expect(ignored.state == .ignored && ignored.ignoredUntilCount == 5)
        for index in 0..<2 {
            _ = try await store.index([crash("nightly-b", receivedAt: start + 300 + Double(index), project: project)])
            #expect(try await store.group(id: id, in: scope)?.state == .ignored)
        }
        _ = try await store.index([crash("nightly-b", receivedAt: start + 400, project: project)])
        #expect(try await store.group(id: id, in: scope)?.state == .open)

        // The newest version seen is nightly-b (first seen later): only a version first seen after it regresses.
        let resolved = try #require(
            try await store.changeStatus(
                groupID: id, in: scope, to: .resolvedInNextVersion, actor: "admin:a", at: start + 500))
        #expect(resolved.resolvedAfter == "nightly-b")
        _ = try await store.index([crash("nightly-a", receivedAt: start + 600, project: project)])
        _ = try await store.index([crash("nightly-b", receivedAt: start + 700, project: project)])
        #expect(try await store.group(id: id, in: scope)?.state == .resolved)
        _ = try await store.index([crash("nightly-c", receivedAt: start + 800, project: project)])
        #expect(try await store.group(id: id, in: scope)?.state == .regressed)
        #expect(
            try await store.statusHistory(groupID: id, in: scope).map(\.to) == [.ignored, .open, .resolved, .regressed])
    }
}
