import Foundation

/// Webhooks and the queue of their deliveries. Alerts are queued during ingest, in the transaction
/// that stores the occurrence causing them (`AlertRules`), so an accepted upload's alerts are never
/// lost to a crash; `claimDueDeliveries` hands each to one sender at a time, even across instances.
public protocol AlertStore: Sendable {
    func createWebhook(_ webhook: NewWebhook, in scope: ProjectScope, at: Date) async throws -> Webhook
    func webhooks(in scope: ProjectScope) async throws -> [Webhook]
    /// False when the project has no such webhook. Its queued deliveries go with it.
    func deleteWebhook(id: Int64, in scope: ProjectScope) async throws -> Bool
    /// Newest first.
    func deliveries(webhookID: Int64?, in scope: ProjectScope, page: Page) async throws -> [AlertDelivery]

    /// Pending deliveries due at `now`, claimed until `claimedUntil` (another sender asking meanwhile
    /// gets others; a claim whose sender died expires), with their webhook: at most `perWebhook` of
    /// one webhook's and `perProject` of one project's in flight (`AlertStatements.dueIDs`).
    func claimDueDeliveries(now: Date, claimedUntil: Date, limit: Int, perWebhook: Int, perProject: Int)
        async throws -> [(AlertDelivery, Webhook)]
    /// Records an attempt: delivered, retried at `retryAt`, or failed for good (neither).
    func recordAttempt(
        deliveryID: Int64, delivered: Bool, retryAt: Date?, status: Int?, error: String?, at: Date
    ) async throws
    /// When the next pending delivery is due (nil: none pending).
    func nextDeliveryDue() async throws -> Date?
}
