import Foundation
import Hummingbird

enum JSONResponse {
    static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }()

    static func make<T: Encodable>(_ value: T, status: HTTPResponse.Status = .ok) throws -> Response {
        let data = try encoder.encode(value)
        return Response(
            status: status, headers: [.contentType: "application/json; charset=utf-8"],
            body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }

}

/// A page of results with the link to the next one.
struct PageOf<Item: Encodable>: Encodable {
    var items: [Item]
    var limit: Int
    var offset: Int
    var next: String?

    init(_ items: [Item], page: Page, path: String, extraQuery: String = "") {
        self.items = items
        self.limit = page.limit
        self.offset = page.offset
        self.next =
            items.count == page.limit
            ? "\(path)?\(extraQuery)limit=\(page.limit)&offset=\(page.offset + page.limit)" : nil
    }
}

extension Request {
    /// The query's parameters, the first of each name, decoded as an HTML form encodes them: `+` is
    /// a space (Hummingbird's `queryParameters` keeps it, and a search for `tick+300` from the UI's
    /// form looked for one word), `%2B` a plus.
    var queryDictionary: [String: String] {
        var parameters: [String: String] = [:]
        for pair in (uri.query ?? "").split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            func decoded(_ text: Substring) -> String {
                let spaced = text.replacingOccurrences(of: "+", with: " ")
                return spaced.removingPercentEncoding ?? spaced
            }
            let name = decoded(parts[0])
            if parameters[name] == nil { parameters[name] = parts.count > 1 ? decoded(parts[1]) : "" }
        }
        return parameters
    }

    var page: Page {
        Page(
            limit: uri.queryParameters.get("limit", as: Int.self) ?? 50,
            offset: uri.queryParameters.get("offset", as: Int.self) ?? 0)
    }
}

/// Two values encoded as one JSON object (the keys of both): a record with what a route adds to it.
struct Merged<Base: Encodable & Sendable, Extra: Encodable & Sendable>: Encodable, Sendable {
    var base: Base
    var extra: Extra

    init(_ base: Base, _ extra: Extra) {
        self.base = base
        self.extra = extra
    }

    func encode(to encoder: any Encoder) throws {
        try base.encode(to: encoder)
        try extra.encode(to: encoder)
    }
}
