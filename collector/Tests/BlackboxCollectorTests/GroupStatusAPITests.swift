import BlackboxFormat
import Foundation
import Testing

@testable import BlackboxCollector

@Suite("Group states over HTTP")
struct GroupStatusAPITests {
    func patch(_ collector: TestCollector, group: Int, _ json: String, token: String? = nil) async throws -> HTTPResult
    {
        try await HTTP.request(
            "\(collector.baseURL)/api/v1/groups/\(group)", method: .PATCH,
            headers: [
                ("Authorization", "Bearer \(token ?? collector.adminToken)"), ("Content-Type", "application/json"),
            ],
            body: Data(json.utf8))
    }

    func upload(_ collector: TestCollector, version: String) async throws {
        let report = Reports.crash(functions: ["shop.pay() -> ()", "shop.main() -> ()"], version: version)
        let zip = try BundleArchive.make(app: report.app, host: "h", reports: [report])
        let result = try await HTTP.upload(collector, zip)
        #expect(result.status == 201 || result.status == 200, "\(result.text)")
    }

    @Test("PATCH resolves with resolvedIn; an upload from an older version keeps it, a newer one regresses it; history")
    func resolveOverHTTP() async throws {
        let collector = try await TestCollector.start()
        defer { Task { await collector.stop() } }
        try await upload(collector, version: "1.1")
        let groups = try await HTTP.get(collector, "/api/v1/groups").json["items"] as? [[String: Any]] ?? []
        let id = try #require(groups.first?["id"] as? Int)
        #expect(groups.first?["state"] as? String == "open")

        let resolved = try await patch(collector, group: id, #"{"state": "resolved", "resolvedIn": "1.2"}"#)
        #expect(resolved.status == 200, "\(resolved.text)")
        #expect(resolved.json["state"] as? String == "resolved" && resolved.json["resolvedIn"] as? String == "1.2")
        let read = try await HTTP.get(collector, "/api/v1/groups/\(id)").json
        #expect(read["state"] as? String == "resolved" && read["resolvedIn"] as? String == "1.2")

        try await upload(collector, version: "1.1.5")
        #expect(try await HTTP.get(collector, "/api/v1/groups/\(id)").json["state"] as? String == "resolved")
        try await upload(collector, version: "1.2.1")
        #expect(try await HTTP.get(collector, "/api/v1/groups/\(id)").json["state"] as? String == "regressed")

        let history = try await HTTP.get(collector, "/api/v1/groups/\(id)/history").json["items"] as? [[String: Any]]
        #expect(history?.map { $0["to"] as? String } == ["resolved", "regressed"], "\(String(describing: history))")
        #expect((history?.first?["actor"] as? String)?.hasPrefix("admin:") == true)

        let reopened = try await patch(collector, group: id, #"{"state": "open"}"#)
        #expect(reopened.json["state"] as? String == "open" && reopened.json["resolvedIn"] == nil)
        let ignored = try await patch(collector, group: id, #"{"state": "ignored", "ignoreUntilMoreOccurrences": 2}"#)
        #expect(ignored.json["state"] as? String == "ignored" && ignored.json["ignoredUntilCount"] as? Int == 5)
    }

    @Test("bad requests are refused with a reason; ingest keys and other ids cannot change a state")
    func refusals() async throws {
        let collector = try await TestCollector.start()
        defer { Task { await collector.stop() } }
        try await upload(collector, version: "1.0")
        let groups = try await HTTP.get(collector, "/api/v1/groups").json["items"] as? [[String: Any]] ?? []
        let id = try #require(groups.first?["id"] as? Int)
        for (body, fragment) in [
            (#"{"state": "regressed"}"#, "becomes regressed"),
            (#"{"state": "closed"}"#, "open, resolved or ignored"),
            (#"not json"#, "JSON object"),
            (#"{"state": "resolved", "resolvedIn": ""}"#, "1 to 64"),
            (#"{"state": "resolved", "resolvedIn": "1", "resolvedInNextVersion": true}"#, "not both"),
            (#"{"state": "ignored", "ignoreUntilMoreOccurrences": 0}"#, "between 1"),
            (#"{"state": "ignored", "ignoredUntil": "tomorrow"}"#, "ISO 8601"),
        ] {
            let result = try await patch(collector, group: id, body)
            #expect(
                result.status == 400 && result.json["error"] as? String == "invalid_status", "\(body): \(result.text)")
            #expect((result.json["message"] as? String)?.contains(fragment) == true, "\(body): \(result.text)")
        }
        let tooLarge = try await patch(
            collector, group: id, "{\"state\": \"open\", \"x\": \"\(String(repeating: "a", count: 5000))\"}")
        #expect(tooLarge.status == 413, "\(tooLarge.status) \(tooLarge.text)")
        #expect(try await patch(collector, group: id, #"{"state": "open"}"#, token: collector.ingestKey).status == 403)
        #expect(try await patch(collector, group: 999_999, #"{"state": "resolved"}"#).status == 404)
        #expect(try await HTTP.get(collector, "/api/v1/groups/\(id)").json["state"] as? String == "open")
        #expect(
            (try await HTTP.get(collector, "/api/v1/groups/\(id)/history").json["items"] as? [Any])?.isEmpty == true)
    }
}
