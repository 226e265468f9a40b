import BlackboxFormat
import Crypto
import Foundation

/// The body of an alert, and its signature. Built when it is sent, from the group or the releases
/// as they are then.
struct AlertPayload {
    enum Subject {
        case group(CrashGroup, latestReport: CrashReport?)
        /// A release regression: the release, and the one it was compared with.
        case release(ReleaseHealth, previous: ReleaseHealth)
    }

    var event: AlertEvent
    var delivery: AlertDelivery
    var subject: Subject
    /// The collector's address for links (`CollectorConfiguration.publicURL`).
    var baseURL: String

    var url: String {
        switch subject {
        case .group(let group, _): "\(baseURL)/groups/\(group.id)"
        case .release(let release, _): Self.releaseURL(release.version, baseURL: baseURL)
        }
    }

    static func releaseURL(_ version: String, baseURL: String) -> String {
        var query = URLComponents()
        query.queryItems = [URLQueryItem(name: "version", value: version)]
        return "\(baseURL)/releases?\(query.percentEncodedQuery ?? "")"
    }

    /// The first frames that name a function (the app's, as far as the report says).
    var topFrames: [String] {
        guard case .group(_, let latestReport) = subject else { return [] }
        return Array((latestReport?.frames ?? []).compactMap { $0.symbols.last?.function }.prefix(5))
    }

    var title: String {
        switch subject {
        case .group(let group, _):
            switch event {
            case .threshold: "\(delivery.occurrences ?? group.count) occurrences: \(group.title)"
            case .regression: "Regression: \(group.title)"
            case .newGroup, .releaseRegression: "New crash group: \(group.title)"
            }
        case .release(let release, let previous):
            "Release \(release.version) fails \(Self.percent(release.failureRate)) of requests; "
                + "\(previous.version) failed \(Self.percent(previous.failureRate))"
        }
    }

    static func percent(_ rate: Double) -> String {
        (rate * 100).formatted(.number.precision(.fractionLength(0...2))) + " %"
    }

    func body(_ format: Webhook.Format) throws -> Data {
        switch format {
        case .json: try jsonBody()
        case .slack: try slackBody()
        }
    }

    private func jsonBody() throws -> Data {
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
        struct Release: Encodable {
            var version: String
            var url: String
            var requests: RequestCounts
            /// Server errors and crashed requests, of all.
            var failureRate: Double
        }
        struct Body: Encodable {
            var event: String
            var deliveryID: Int64
            var group: Group?
            var latestReport: Latest?
            var occurrences: Int?
            var release: Release?
            var previousRelease: Release?
            var text: String
        }
        var body = Body(event: event.rawValue, deliveryID: delivery.id, occurrences: delivery.occurrences, text: title)
        switch subject {
        case .group(let group, let latestReport):
            body.group = Group(
                id: group.id, title: group.title, kind: group.kind, state: group.state.rawValue, count: group.count,
                firstSeen: group.firstSeen, lastSeen: group.lastSeen, url: url, versions: group.versions)
            body.latestReport = latestReport.map {
                Latest(id: $0.id.uuidString.lowercased(), reason: $0.reason ?? $0.fatalMessage, topFrames: topFrames)
            }
        case .release(let release, let previous):
            func figures(_ release: ReleaseHealth) -> Release {
                Release(
                    version: release.version, url: Self.releaseURL(release.version, baseURL: baseURL),
                    requests: release.requests, failureRate: release.failureRate)
            }
            body.release = figures(release)
            body.previousRelease = figures(previous)
        }
        return try JSONResponse.encoder.encode(body)
    }

    private func slackBody() throws -> Data {
        struct Body: Encodable { var text: String }
        var lines: [String]
        switch subject {
        case .group(let group, let latestReport):
            lines = ["*\(Self.slackEscaped(title))* (<\(url)|group \(group.id)>)"]
            if let reason = latestReport?.reason ?? latestReport?.fatalMessage {
                lines.append(Self.slackEscaped(reason))
            }
            if !topFrames.isEmpty {
                lines.append("```\n" + topFrames.map(Self.slackEscaped).joined(separator: "\n") + "\n```")
            }
        case .release(let release, _):
            lines = [
                "*\(Self.slackEscaped(title))* (<\(url)|release \(Self.slackEscaped(release.version))>)",
                "\(release.requests.total) requests: \(release.requests.serverErrors) server errors, "
                    + "\(release.requests.crashed) cut short by a crash",
            ]
        }
        return try JSONResponse.encoder.encode(Body(text: lines.joined(separator: "\n")))
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
