import Foundation
import Hummingbird

/// `/alerts`: the project's webhooks and their latest deliveries.
struct AlertsPage: PageModel {
    static let template = "alerts"

    struct Webhook: Encodable {
        let id: Int64
        let url: String
        let events: String
        let format: String
        let signed: String
        let threshold: String
    }

    struct Delivery: Encodable {
        let createdAt: String
        let webhookID: Int64
        let event: String
        /// The group's or the release's page.
        let subject: String
        let subjectURL: String
        let state: String
        let attempts: Int
        let answer: String
    }

    let title = "Alerts"
    let hasWebhooks: Bool
    let webhooks: [Webhook]
    let hasDeliveries: Bool
    let deliveries: [Delivery]

    static func routes(store: any CollectorStore, pages: PageRenderer) -> RouteCollection<AuthenticatedContext> {
        let routes = RouteCollection(context: AuthenticatedContext.self)
        routes.get("alerts") { _, context in
            let webhooks = try await store.webhooks(in: context.scope)
            let deliveries = try await store.deliveries(webhookID: nil, in: context.scope, page: Page(limit: 50))
            return pages.render(
                AlertsPage(
                    hasWebhooks: !webhooks.isEmpty,
                    webhooks: webhooks.map { webhook in
                        Webhook(
                            id: webhook.id, url: webhook.url,
                            events: webhook.events.map(\.rawValue).joined(separator: ", "),
                            format: webhook.format.rawValue, signed: webhook.signed ? "yes" : "no",
                            threshold: [
                                webhook.threshold.map { "more than \($0.count) in \($0.minutes) min" },
                                webhook.releaseRegression.map {
                                    "a release failing \($0.factor.formatted())× the last's (\($0.minimumRequests) requests)"
                                },
                            ].compactMap { $0 }.joined(separator: "; "))
                    },
                    hasDeliveries: !deliveries.isEmpty,
                    deliveries: deliveries.map { delivery in
                        Delivery(
                            createdAt: iso(delivery.createdAt), webhookID: delivery.webhookID,
                            event: delivery.event.rawValue,
                            subject: delivery.groupID.map { "group \($0)" } ?? "release \(delivery.version ?? "")",
                            subjectURL: delivery.groupID.map { "/groups/\($0)" }
                                ?? AlertPayload.releaseURL(delivery.version ?? "", baseURL: ""),
                            state: delivery.state.rawValue,
                            attempts: delivery.attempts,
                            answer: delivery.lastStatus.map { "HTTP \($0)" } ?? delivery.lastError ?? "")
                    }))
        }
        return routes
    }
}
