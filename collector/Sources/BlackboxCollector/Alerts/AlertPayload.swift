import BlackboxFormat
import Crypto
import Foundation

/// The body of an alert, and its signature. Built when it is sent, from the group as it is then.
struct AlertPayload {
    var event: AlertEvent
    var delivery: AlertDelivery
    var group: CrashGroup
    var latestReport: CrashReport?
    /// The collector's address for links (`CollectorConfiguration.publicURL`).
    var baseURL: String

    var groupURL: String { "\(baseURL)/groups/\(group.id)" }

    /// The first frames that name a function (the app's, as far as the report says).
    var topFrames: [String] {
        Array((latestReport?.frames ?? []).compactMap { $0.symbols.last?.function }.prefix(5))
    }

    var title: String {
        switch event {
        case .newGroup: "New crash group: \(group.title)"
        case .regression: "Regression: \(group.title)"
        case .threshold: "\(delivery.occurrences ?? group.count) occurrences: \(group.title)"
        }
    }

    func body(_ format: Webhook.Format) throws -> Data {
        switch format {
        case .json:
            struct Group: Encodable {
                var id: Int64
                var title: String
                var kind: String
                var state: String
                var count: Int
                var firstSeen: Date
                var lastSeen: Date
                var url: String
                var versions: [String: Int]
            }
            struct Latest: Encodable {
                var id: String
                var reason: String?
                var topFrames: [String]
            }
            struct Body: Encodable {
                var event: String
                var deliveryID: Int64
                var group: Group
                var latestReport: Latest?
                var occurrences: Int?
                var text: String
            }
            let body = Body(
                event: event.rawValue, deliveryID: delivery.id,
                group: Group(
                    id: group.id, title: group.title, kind: group.kind, state: group.state.rawValue, count: group.count,
                    firstSeen: group.firstSeen, lastSeen: group.lastSeen, url: groupURL, versions: group.versions),
                latestReport: latestReport.map {
                    Latest(
                        id: $0.id.uuidString.lowercased(), reason: $0.reason ?? $0.fatalMessage, topFrames: topFrames)
                },
                occurrences: delivery.occurrences, text: title)
            return try JSONResponse.encoder.encode(body)
        case .slack:
            struct Body: Encodable { var text: String }
            var lines = ["*\(Self.slackEscaped(title))* (<\(groupURL)|group \(group.id)>)"]
            if let reason = latestReport?.reason ?? latestReport?.fatalMessage {
                lines.append(Self.slackEscaped(reason))
            }
            if !topFrames.isEmpty {
                lines.append("```\n" + topFrames.map(Self.slackEscaped).joined(separator: "\n") + "\n```")
            }
            return try JSONResponse.encoder.encode(Body(text: lines.joined(separator: "\n")))
        }
    }

    /// Slack's mrkdwn treats `&`, `<` and `>` as markup.
    static func slackEscaped(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;")
    }

    /// `sha256=<hex HMAC-SHA256 of the body>` with the webhook's secret.
    static func signature(of body: Data, secret: String) -> String {
        let code = HMAC<SHA256>.authenticationCode(for: body, using: SymmetricKey(data: Data(secret.utf8)))
        return "sha256=" + lowercaseHex(Data(code))
    }
}
