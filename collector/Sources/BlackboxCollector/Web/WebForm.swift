import Foundation
import Hummingbird

/// The web UI's POST forms (`application/x-www-form-urlencoded`), read with a small bound.
enum WebForm {
    static let maxBytes = 16 << 10

    /// What a page says when a form's anti-forgery token does not match.
    static let expired = "The form expired or came from another site: reload the page and try again."

    static func read(_ request: Request) async throws -> [String: String] {
        fields(String(buffer: try await request.body.collect(upTo: maxBytes)))
    }

    /// The fields by name (the first of each name).
    static func fields(_ body: String) -> [String: String] {
        var fields: [String: String] = [:]
        for pair in body.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts.count == 2,
                let name = String(parts[0]).replacingOccurrences(of: "+", with: " ").removingPercentEncoding,
                let value = String(parts[1]).replacingOccurrences(of: "+", with: " ").removingPercentEncoding,
                fields[name] == nil
            else { continue }
            fields[name] = value
        }
        return fields
    }
}
