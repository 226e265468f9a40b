import Foundation
import Hummingbird

/// Webhooks (admin token): `POST /api/v1/webhooks` creates one for the token's project, `GET` lists
/// them (never their secrets), `DELETE /api/v1/webhooks/{id}` removes one with its queue, and
/// `GET /api/v1/webhooks/{id}/deliveries` shows the last deliveries and their status.
struct AlertsAPI {
    let store: any AlertStore
    /// Where a webhook may point (checked again before each delivery: DNS can change).
    let targets: WebhookTargets
    /// Webhooks per project: each one costs a query per stored occurrence.
    static let maxWebhooksPerProject = 20

    func register(on group: RouterGroup<AuthenticatedContext>) {
        group.post("webhooks") { request, context in
            let body = try await request.body.collect(upTo: 16 << 10)
            let webhook = try NewWebhook(json: Data(buffer: body))
            if let host = URLComponents(string: webhook.url)?.host,
                case .failure(let refusal) = await targets.check(host: host)
            {
                throw APIError.invalidWebhook("url: \(refusal)")
            }
            guard try await store.webhooks(in: context.scope).count < Self.maxWebhooksPerProject else {
                throw APIError.invalidWebhook("a project has at most \(Self.maxWebhooksPerProject) webhooks")
            }
            return try JSONResponse.make(
                try await store.createWebhook(webhook, in: context.scope, at: Date()), status: .created)
        }
        group.get("webhooks") { _, context in
            struct List: Encodable { var items: [Webhook] }
            return try JSONResponse.make(List(items: try await store.webhooks(in: context.scope)))
        }
        group.delete("webhooks/:id") { _, context in
            guard try await store.deleteWebhook(id: try context.id(), in: context.scope) else {
                throw APIError.notFound("webhook")
            }
            return Response(status: .noContent)
        }
        group.get("webhooks/:id/deliveries") { request, context in
            let id = try context.id()
            guard try await store.webhooks(in: context.scope).contains(where: { $0.id == id }) else {
                throw APIError.notFound("webhook")
            }
            let page = request.page
            let deliveries = try await store.deliveries(webhookID: id, in: context.scope, page: page)
            return try JSONResponse.make(PageOf(deliveries, page: page, path: "/api/v1/webhooks/\(id)/deliveries"))
        }
    }
}

extension NewWebhook {
    /// `{"url": "https://…", "events": ["new-group", "regression", "threshold", "release-regression"],
    /// "secret": "…", "format": "json" | "slack", "threshold": {"count": 100, "minutes": 60},
    /// "releaseRegression": {"factor": 2, "minimumRequests": 1000}}`; `secret`, `format` (default json),
    /// `threshold` (default more than 100 in 60 minutes) and `releaseRegression` (default twice the
    /// previous release's rate, 1000 requests each) may be left out.
    init(json: Data) throws(APIError) {
        struct Body: Decodable {
            var url: String?
            var events: [String]?
            var secret: String?
            var format: String?
            var threshold: Webhook.Threshold?
            var releaseRegression: Webhook.ReleaseRegression?
        }
        let body: Body
        do {
            body = try JSONDecoder().decode(Body.self, from: json)
        } catch {
            throw .invalidWebhook(
                "the body must be a JSON object such as {\"url\": \"https://…\", \"events\": [\"new-group\"]}")
        }
        guard let url = body.url, url.utf8.count <= 2048, let components = URLComponents(string: url),
            components.scheme == "http" || components.scheme == "https", components.host?.isEmpty == false,
            components.user == nil
        else { throw .invalidWebhook("url must be an http or https URL without credentials, at most 2048 bytes") }
        var events: [AlertEvent] = []
        for name in body.events ?? [] {
            guard let event = AlertEvent(rawValue: name) else {
                throw .invalidWebhook(
                    "events may be new-group, regression, threshold and release-regression; not \(name.prefix(40))")
            }
            if !events.contains(event) { events.append(event) }
        }
        guard !events.isEmpty else {
            throw .invalidWebhook(
                "events must name at least one of new-group, regression, threshold, release-regression")
        }
        if let secret = body.secret, !(1...256).contains(secret.utf8.count) {
            throw .invalidWebhook("secret must be 1 to 256 bytes")
        }
        guard let format = Webhook.Format(rawValue: body.format ?? "json") else {
            throw .invalidWebhook("format must be json or slack")
        }
        var threshold: Webhook.Threshold?
        if events.contains(.threshold) {
            threshold = body.threshold ?? .init(count: 100, minutes: 60)
            guard let chosen = threshold, (1...1_000_000).contains(chosen.count), (1...10_080).contains(chosen.minutes)
            else { throw .invalidWebhook("threshold needs a count of 1 to 1000000 and minutes of 1 to 10080") }
        }
        var releaseRegression: Webhook.ReleaseRegression?
        if events.contains(.releaseRegression) {
            releaseRegression = body.releaseRegression ?? .init(factor: 2, minimumRequests: 1000)
            guard let chosen = releaseRegression, chosen.factor.isFinite, (1.01...1000).contains(chosen.factor),
                (1...1_000_000_000).contains(chosen.minimumRequests)
            else {
                throw .invalidWebhook(
                    "releaseRegression needs a factor of 1.01 to 1000 and minimumRequests of 1 to 1000000000")
            }
        }
        self.init(
            url: url, events: events, secret: body.secret, format: format, threshold: threshold,
            releaseRegression: releaseRegression)
    }
}

extension APIError {
    static func invalidWebhook(_ detail: String) -> Self {
        .init(status: 400, code: "invalid_webhook", message: detail)
    }
}
