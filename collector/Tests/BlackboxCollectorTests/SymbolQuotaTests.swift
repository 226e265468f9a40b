import BlackboxTestSupport
import Foundation
import Testing

@testable import BlackboxCollector

/// Issue 30, items 6 and 8: the symbol store is bounded per project (files, bytes, upload slots),
/// files can be deleted, and the first file of a build-id is the one used.
@Suite("Symbol store: quotas, deletion, first upload wins")
struct SymbolQuotaTests {
    @Test(
        "the first file of a build-id wins: another with the same contents is refused to a symbols key and replaced only by the admin token; DELETE is the admin's and frees the blob"
    )
    func firstUploadWins() async throws {
        let fixture = try await SymbolFixture.make()
        defer { fixture.remove() }
        let collector = try await TestCollector.start()
        let key = try await SymbolStoreTests.symbolsKey(collector)
        let original = try Data(contentsOf: URL(fileURLWithPath: fixture.debugFile))
        // The same build-id note, other bytes: what anyone who builds an ELF file can write.
        let impostor = original + Data("trailing bytes of someone else's file".utf8)
        let buildID = fixture.buildID

        let first = try await SymbolStoreTests.put(
            collector, buildID: buildID, name: "app.debug", body: original, token: key)
        #expect(first.status == 201, "\(first.text)")
        let refused = try await SymbolStoreTests.put(
            collector, buildID: buildID, name: "evil.debug", body: impostor, token: key)
        #expect(refused.status == 409 && refused.json["error"] as? String == "symbol_file_exists", "\(refused.text)")
        #expect(refused.text.contains("app.debug"))
        let notAllowed = try await HTTP.request(
            collector.baseURL + "/api/v1/symbols/\(buildID)?name=evil.debug&replace=1", method: .PUT,
            headers: [("Authorization", "Bearer \(key)")], body: impostor)
        #expect(notAllowed.status == 403, "replace=1 needs the admin token")
        let served = try await HTTP.get(collector, "/buildid/\(buildID)/debuginfo", token: key)
        #expect(served.status == 200 && served.body == original, "debuginfod serves the first file")

        // The admin replaces it: the old record and its blob are gone, the new one is served.
        let replaced = try await HTTP.request(
            collector.baseURL + "/api/v1/symbols/\(buildID)?name=new.debug&replace=1", method: .PUT,
            headers: [("Authorization", "Bearer \(collector.adminToken)")], body: impostor)
        #expect(replaced.status == 201, "\(replaced.text)")
        let gone = (replaced.json["replaced"] as? [[String: Any]])?.first
        #expect(gone?["fileName"] as? String == "app.debug", "\(replaced.text)")
        let oldBlob = try #require(gone?["blob"] as? String)
        #expect(try await !collector.server.symbolBlobs.names().contains(oldBlob), "the replaced file's blob stays")
        #expect(try await HTTP.get(collector, "/buildid/\(buildID)/debuginfo", token: key).body == impostor)

        // DELETE: not with a symbols key; with the admin token it deletes, and frees the blob.
        let listed = try await HTTP.get(collector, "/api/v1/symbols").json["items"] as? [[String: Any]] ?? []
        let blob = try #require(listed.first?["blob"] as? String)
        let byKey = try await HTTP.request(
            collector.baseURL + "/api/v1/symbols/\(buildID)", method: .DELETE,
            headers: [("Authorization", "Bearer \(key)")])
        #expect(byKey.status == 403)
        let deleted = try await HTTP.request(
            collector.baseURL + "/api/v1/symbols/\(buildID)", method: .DELETE,
            headers: [("Authorization", "Bearer \(collector.adminToken)")])
        #expect(deleted.status == 200 && (deleted.json["deleted"] as? [Any])?.count == 1, "\(deleted.text)")
        #expect(try await !collector.server.symbolBlobs.names().contains(blob))
        #expect(try await HTTP.get(collector, "/buildid/\(buildID)/debuginfo", token: key).status == 404)
        let again = try await HTTP.request(
            collector.baseURL + "/api/v1/symbols/\(buildID)", method: .DELETE,
            headers: [("Authorization", "Bearer \(collector.adminToken)")])
        #expect(again.status == 404)
        await collector.stop()
    }

    @Test(
        "a project's symbol quota: files and bytes, 413 quota_exceeded past either, usage shown, room again after a delete"
    )
    func quotas() async throws {
        let fixture = try await SymbolFixture.make()
        defer { fixture.remove() }
        let original = try Data(contentsOf: URL(fileURLWithPath: fixture.debugFile))
        let full = try Data(contentsOf: URL(fileURLWithPath: fixture.full))
        let app = try Data(contentsOf: URL(fileURLWithPath: fixture.app))
        // Room for the debug file and the stripped binary, not for the unstripped one beside the first.
        let collector = try await TestCollector.start {
            $0.limits.maxSymbolFilesPerProject = 2
            $0.limits.maxSymbolBytesPerProject = Int64(original.count + app.count + 1)
        }
        let key = try await SymbolStoreTests.symbolsKey(collector)

        #expect(
            try await SymbolStoreTests.put(
                collector, buildID: fixture.buildID, name: "app.debug", body: original, token: key
            )
            .status == 201)
        #expect(full.count > app.count + 1)
        let tooBig = try await SymbolStoreTests.put(
            collector, buildID: fixture.buildID, name: "full", body: full, token: key)
        #expect(tooBig.status == 413 && tooBig.json["error"] as? String == "quota_exceeded", "\(tooBig.text)")
        #expect(
            try await SymbolStoreTests.put(collector, buildID: fixture.buildID, name: "app", body: app, token: key)
                .status
                == 201)
        let usage = try await HTTP.get(collector, "/api/v1/symbols/usage").json
        #expect(usage["files"] as? Int == 2 && usage["maxFiles"] as? Int == 2, "\(usage)")
        #expect(usage["bytes"] as? Int == original.count + app.count)

        // Two files: the third is refused before its body is read.
        let third = try await SymbolStoreTests.put(
            collector, buildID: fixture.buildID, name: "other", body: original + Data([0]), token: key)
        #expect(third.status == 413 && third.text.contains("maxSymbolFilesPerProject"), "\(third.text)")
        #expect(try await SymbolQuotaTests.stored(collector) == 2, "nothing past the quota is stored")
        let metrics = try await HTTP.request("\(collector.baseURL)/metrics").text
        #expect(metrics.contains(#"blackbox_symbol_uploads_rejected_total{reason="quota_exceeded"} 2"#), "\(metrics)")

        let deleted = try await HTTP.request(
            collector.baseURL + "/api/v1/symbols/\(fixture.buildID)", method: .DELETE,
            headers: [("Authorization", "Bearer \(collector.adminToken)")])
        #expect(deleted.status == 200)
        #expect(
            try await SymbolStoreTests.put(
                collector, buildID: fixture.buildID, name: "app.debug", body: original, token: key
            )
            .status == 201, "room again after the delete")
        await collector.stop()
    }

    static func stored(_ collector: TestCollector) async throws -> Int {
        (try await HTTP.get(collector, "/api/v1/symbols").json["items"] as? [Any])?.count ?? -1
    }

    @Test("upload slots: a project takes at most its share; another project still gets one")
    func slotsPerProject() throws {
        let slots = UploadSlots()
        try slots.enter(project: 1, limit: 4, perProject: 2)
        try slots.enter(project: 1, limit: 4, perProject: 2)
        #expect(throws: UploadSlots.Refusal.projectFull) { try slots.enter(project: 1, limit: 4, perProject: 2) }
        try slots.enter(project: 2, limit: 4, perProject: 2)
        try slots.enter(project: 3, limit: 4, perProject: 2)
        #expect(throws: UploadSlots.Refusal.full) { try slots.enter(project: 4, limit: 4, perProject: 2) }
        slots.leave(project: 1)
        try slots.enter(project: 1, limit: 4, perProject: 2)
    }
}
