import Foundation

/// How many new-group alerts a webhook gets: one upload with the public ingest key can make
/// thousands of new groups, and a team's channel must not get thousands of messages. Per webhook and
/// minute, the first `perMinute` go out one by one; the rest are folded into one digest sent when the
/// minute is over ("and 1,985 more new crash groups"). Decisions only: the dispatcher sends.
/// Held in memory: a restart forgets a digest not sent yet (its groups are on the groups page).
struct NewGroupDigest: Sendable {
    static let perMinute = 10
    /// Groups a digest names; it counts the rest.
    static let namedInDigest = 20

    struct Folded: Sendable, Equatable {
        var groupID: Int64
        var title: String
    }

    struct Due: Sendable {
        var webhook: Webhook
        var groups: [Folded]
        var count: Int
    }

    private struct Window {
        var start: Date
        var sent = 0
        var webhook: Webhook?
        var folded: [Folded] = []
        var foldedCount = 0
    }

    private var windows: [Int64: Window] = [:]
    /// The window's length: a minute (tests shorten it).
    let window: TimeInterval

    init(window: TimeInterval = 60) {
        self.window = window
    }

    /// Whether a new-group alert for `webhook` goes out now; false: fold it (`fold`).
    mutating func admits(_ webhook: Webhook, at now: Date) -> Bool {
        var window = windows[webhook.id] ?? Window(start: now)
        if now.timeIntervalSince(window.start) >= self.window, window.foldedCount == 0 {
            window = Window(start: now)
        }
        defer { windows[webhook.id] = window }
        guard window.sent < Self.perMinute else { return false }
        window.sent += 1
        return true
    }

    mutating func fold(_ webhook: Webhook, groupID: Int64, title: String) {
        guard var window = windows[webhook.id] else { return }
        window.webhook = webhook
        if window.folded.count < Self.namedInDigest { window.folded.append(Folded(groupID: groupID, title: title)) }
        window.foldedCount += 1
        windows[webhook.id] = window
    }

    /// The digests whose minute is over; their windows start again.
    mutating func due(at now: Date) -> [Due] {
        var due: [Due] = []
        for (id, window) in windows where now.timeIntervalSince(window.start) >= self.window {
            if let webhook = window.webhook, window.foldedCount > 0 {
                due.append(Due(webhook: webhook, groups: window.folded, count: window.foldedCount))
            }
            windows[id] = nil
        }
        return due.sorted { $0.webhook.id < $1.webhook.id }
    }

    /// The digest's body in the webhook's format.
    static func body(_ digest: Due, baseURL: String) throws -> Data {
        let text =
            "\(digest.count) more new crash groups in the last minute (alerts past \(perMinute) a minute are folded)"
        switch digest.webhook.format {
        case .json:
            struct Group: Encodable {
                var id: Int64
                var title: String
                var url: String
            }
            struct Body: Encodable {
                var event = "new-group-digest"
                var count: Int
                var groups: [Group]
                var text: String
            }
            return try JSONResponse.encoder.encode(
                Body(
                    count: digest.count,
                    groups: digest.groups.map {
                        Group(id: $0.groupID, title: $0.title, url: "\(baseURL)/groups/\($0.groupID)")
                    },
                    text: text))
        case .slack:
            struct Body: Encodable { var text: String }
            let named = digest.groups.prefix(5).map {
                "• <\(baseURL)/groups/\($0.groupID)|\(AlertPayload.slackEscaped($0.title))>"
            }
            return try JSONResponse.encoder.encode(Body(text: (["*\(text)*"] + named).joined(separator: "\n")))
        }
    }
}
