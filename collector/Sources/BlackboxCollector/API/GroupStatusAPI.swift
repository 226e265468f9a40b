import Foundation
import Hummingbird

/// Changing a group's state: `PATCH /api/v1/groups/{id}` (admin token) with a JSON body, and its
/// history at `GET /api/v1/groups/{id}/history`.
struct GroupStatusAPI {
    let store: any TriageStore & ProjectReader

    func register(on group: RouterGroup<AuthenticatedContext>) {
        group.patch("groups/:id") { request, context in
            let id = try context.id()
            let body = try await request.body.collect(upTo: 4 << 10)
            let statusRequest = try StatusRequest(json: Data(buffer: body))
            guard
                let changed = try await store.changeStatus(
                    groupID: id, in: context.scope, to: statusRequest, actor: "admin:\(context.key.prefix)", at: Date())
            else { throw APIError.notFound("group") }
            return try JSONResponse.make(changed)
        }
        group.get("groups/:id/history") { _, context in
            let id = try context.id()
            guard try await store.group(id: id, in: context.scope) != nil else { throw APIError.notFound("group") }
            struct History: Encodable { var items: [GroupStatusChange] }
            return try JSONResponse.make(History(items: try await store.statusHistory(groupID: id, in: context.scope)))
        }
    }
}

extension StatusRequest {
    /// What a request names, from a JSON body or a web form.
    struct Fields: Decodable {
        var state: String?
        var resolvedIn: String?
        var resolvedInNextVersion: Bool?
        var ignoreUntilMoreOccurrences: Int?
        var ignoredUntil: String?
    }

    /// The `PATCH` body: `{"state": "open"}`; `{"state": "resolved"}` with `"resolvedIn": "1.2"`,
    /// `"resolvedInNextVersion": true` or neither (any further occurrence regresses it);
    /// `{"state": "ignored"}` with `"ignoreUntilMoreOccurrences": N` and/or `"ignoredUntil": "<ISO 8601>"`,
    /// or neither (forever). `regressed` is the collector's to set.
    init(json: Data) throws(APIError) {
        let fields: Fields
        do {
            fields = try JSONDecoder().decode(Fields.self, from: json)
        } catch {
            throw .invalidStatus(
                "the body must be a JSON object such as {\"state\": \"resolved\", \"resolvedIn\": \"1.2\"}")
        }
        try self.init(fields)
    }

    /// The group page's form: the same names; empty fields count as absent.
    init(form: [String: String]) throws(APIError) {
        func value(_ name: String) -> String? { form[name].flatMap { $0.isEmpty ? nil : $0 } }
        var fields = Fields(state: value("state"), resolvedIn: value("resolvedIn"), ignoredUntil: value("ignoredUntil"))
        fields.resolvedInNextVersion = value("resolvedInNextVersion").map { $0 == "1" || $0 == "true" || $0 == "on" }
        if let more = value("ignoreUntilMoreOccurrences") {
            guard let number = Int(more) else {
                throw .invalidStatus("ignoreUntilMoreOccurrences must be between 1 and 1000000000")
            }
            fields.ignoreUntilMoreOccurrences = number
        }
        try self.init(fields)
    }

    init(_ body: Fields) throws(APIError) {
        switch body.state {
        case "open":
            self = .open
        case "resolved":
            if body.resolvedInNextVersion == true {
                guard body.resolvedIn == nil else {
                    throw .invalidStatus("give resolvedIn or resolvedInNextVersion, not both")
                }
                self = .resolvedInNextVersion
            } else {
                self = .resolved(in: try body.resolvedIn.map(Self.version))
            }
        case "ignored":
            var until: Date?
            if let text = body.ignoredUntil {
                guard let date = try? Date(text, strategy: .iso8601) else {
                    throw .invalidStatus("ignoredUntil must be an ISO 8601 time such as 2026-12-01T00:00:00Z")
                }
                until = date
            }
            if let more = body.ignoreUntilMoreOccurrences, !(1...1_000_000_000).contains(more) {
                throw .invalidStatus("ignoreUntilMoreOccurrences must be between 1 and 1000000000")
            }
            self = .ignored(moreOccurrences: body.ignoreUntilMoreOccurrences, until: until)
        case "regressed":
            throw .invalidStatus("a group becomes regressed when it recurs; set open, resolved or ignored")
        default:
            throw .invalidStatus("state must be open, resolved or ignored")
        }
    }

    /// A version as a person typed it: trimmed, 1 to 64 characters, no control characters.
    static func version(_ text: String) throws(APIError) -> String {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        guard !trimmed.isEmpty, trimmed.count <= GroupTriage.maxVersionLength,
            !trimmed.unicodeScalars.contains(where: { $0.properties.generalCategory == .control })
        else { throw .invalidStatus("resolvedIn must be a version of 1 to \(GroupTriage.maxVersionLength) characters") }
        return trimmed
    }
}

extension APIError {
    static func invalidStatus(_ detail: String) -> Self {
        .init(status: 400, code: "invalid_status", message: detail)
    }
}
