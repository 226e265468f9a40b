import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import ServiceLifecycle
import Synchronization

/// Sends queued alerts: woken after ingest stores an occurrence, and every `pollInterval` for
/// retries that came due. Each delivery is claimed for `claimLease` before it is sent (on
/// PostgreSQL, one instance at a time), answered with 2xx or retried with backoff
/// (`AlertRules.retryDelay`); what a restart interrupts is claimed again once the lease expires.
///
/// Receivers should treat `X-Blackbox-Delivery` as an idempotency key: a collector killed after a
/// receiver answered but before the answer was recorded sends that delivery again.
final class AlertDispatcher: Service, Sendable {
    private let store: any AlertStore & ProjectReader & ReleaseStore
    private let baseURL: String
    private let claimLease: Duration
    private let pollInterval: Duration
    private let loop: WorkerLoop
    private let targets: WebhookTargets
    private let digest: Mutex<NewGroupDigest>
    private let logger = Logger(label: "collector.alerts")

    /// A receiver that does not answer within this is retried later.
    static let requestTimeout: Duration = .seconds(10)

    init(
        store: any AlertStore & ProjectReader & ReleaseStore, baseURL: String, pollInterval: Duration = .seconds(1),
        claimLease: Duration = .seconds(60), targets: WebhookTargets = WebhookTargets(),
        digestWindow: Duration = .seconds(60)
    ) {
        self.store = store
        self.targets = targets
        self.digest = Mutex(NewGroupDigest(window: TimeInterval(digestWindow.components.seconds)))
        self.baseURL = baseURL
        self.claimLease = claimLease
        self.pollInterval = pollInterval
        loop = WorkerLoop(interval: pollInterval)
    }

    func wake() { loop.wake() }

    /// A client for one delivery, connecting to `address` (the one `WebhookTargets` checked) for the
    /// webhook's host, so that no second DNS answer decides where the alert goes; TLS still checks
    /// the host's name. Shut down after the delivery: AsyncHTTPClient traps when a client is
    /// released without `shutdown()`.
    static func makeClient(pinning host: String, to address: IPAddress) -> HTTPClient {
        var configuration = HTTPClient.Configuration()
        // A redirect would carry the signed body (and its secret's signature) somewhere else.
        configuration.redirectConfiguration = .disallow
        configuration.timeout = .init(connect: .seconds(5), read: .seconds(10))
        // A refused connection is one failed attempt, retried on the queue's schedule, not for 5 s here.
        configuration.connectionPool.retryConnectionEstablishment = false
        configuration.dnsOverride = [host: address.description]
        return HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
    }

    /// At shutdown, the sends in flight finish and their answers are recorded; nothing new starts.
    func run() async throws {
        await loop.run { await deliverDue() }
    }

    private var isStopping: Bool { loop.isStopping }

    /// Sends at most this many deliveries at once, at most `perWebhookInFlight` to one webhook and
    /// `perProjectInFlight` for one project (the claim query ranks them, in flight first), so a
    /// tenant's receivers that never answer hold four slots for their 10 s, not every project's alerts.
    static let concurrentSends = 16
    static let perWebhookInFlight = 2
    static let perProjectInFlight = 4

    /// Sends every delivery due now, and the digests whose minute is over; returns how many
    /// deliveries were attempted (tests wait with it). A slot freed by one send is claimed again
    /// within a poll: no send waits for the slowest of a batch, and a delivery queued meanwhile (for
    /// another project) is picked up while slow ones are still in flight.
    @discardableResult
    func deliverDue() async -> Int {
        await sendDueDigests()
        final class InFlight: Sendable { let count = Atomic<Int>(0) }
        let inFlight = InFlight()
        var attempted = 0
        await withTaskGroup(of: Void.self) { sends in
            while !isStopping {
                let running = inFlight.count.load(ordering: .relaxed)
                let now = Date()
                var claimed: [(AlertDelivery, Webhook)] = []
                if running < Self.concurrentSends {
                    do {
                        claimed = try await store.claimDueDeliveries(
                            now: now,
                            claimedUntil: now.addingTimeInterval(TimeInterval(claimLease.components.seconds)),
                            limit: Self.concurrentSends - running, perWebhook: Self.perWebhookInFlight,
                            perProject: Self.perProjectInFlight)
                    } catch {
                        logger.error("cannot read the alert queue: \(error)")
                    }
                }
                for (delivery, webhook) in claimed {
                    inFlight.count.add(1, ordering: .relaxed)
                    sends.addTask {
                        await self.attempt(delivery, to: webhook)
                        inFlight.count.subtract(1, ordering: .relaxed)
                    }
                }
                attempted += claimed.count
                if claimed.isEmpty {
                    if inFlight.count.load(ordering: .relaxed) == 0 { break }
                    try? await Task.sleep(for: min(pollInterval, .milliseconds(200)))
                }
            }
            await sends.waitForAll()
        }
        return attempted
    }

    private func sendDueDigests() async {
        for due in digest.withLock({ $0.due(at: Date()) }) {
            do {
                let body = try NewGroupDigest.body(due, baseURL: baseURL)
                let outcome = await post(body, event: "new-group-digest", deliveryHeader: "digest", to: due.webhook)
                if !outcome.delivered {
                    logger.notice(
                        "the new-group digest for webhook \(due.webhook.id) was not delivered (\(due.count) groups)")
                }
            } catch {
                logger.error("cannot build the new-group digest: \(error)")
            }
        }
    }

    private func attempt(_ delivery: AlertDelivery, to webhook: Webhook) async {
        if delivery.event == .newGroup, let groupID = delivery.groupID,
            !digest.withLock({ $0.admits(webhook, at: Date()) })
        {
            let title =
                (try? await store.group(id: groupID, in: ProjectScope(projectID: webhook.projectID)))??.title
                ?? "group \(groupID)"
            digest.withLock { $0.fold(webhook, groupID: groupID, title: title) }
            do {
                try await store.recordAttempt(
                    deliveryID: delivery.id, delivered: true, retryAt: nil, status: nil,
                    error: Self.foldedIntoDigest, at: Date())
            } catch {
                logger.error("cannot record alert \(delivery.id) as folded: \(error)")
            }
            return
        }
        let outcome = await send(delivery, to: webhook)
        let attempts = delivery.attempts + 1
        let retryAt =
            outcome.delivered
            ? nil
            : AlertRules.retryDelay(afterAttempts: attempts).map {
                Date().addingTimeInterval(Double($0.components.seconds) + Double($0.components.attoseconds) / 1e18)
            }
        if !outcome.delivered {
            logger.notice(
                "alert \(delivery.id) to webhook \(webhook.id) not delivered (attempt \(attempts)): \(outcome.error ?? "status \(outcome.status ?? 0)")\(retryAt == nil ? "; giving up" : "")"
            )
        }
        do {
            try await store.recordAttempt(
                deliveryID: delivery.id, delivered: outcome.delivered, retryAt: retryAt, status: outcome.status,
                error: outcome.error, at: Date())
        } catch {
            logger.error("cannot record alert \(delivery.id)'s attempt: \(error)")
        }
    }

    /// What a tenant is told of a delivery that got no HTTP answer: one phrase for a refused
    /// connection, a silent host, a TLS failure and a refused target alike, so that the deliveries
    /// list cannot map the collector's network (the server's log has the details).
    static let notDelivered = "no answer from the receiver"
    /// A new-group alert past the webhook's rate, sent in the minute's digest instead.
    static let foldedIntoDigest = "folded into the new-group digest"

    private func send(_ delivery: AlertDelivery, to webhook: Webhook) async -> (
        delivered: Bool, status: Int?, error: String?
    ) {
        let body: Data
        do {
            guard let subject = try await subject(of: delivery, in: ProjectScope(projectID: webhook.projectID)) else {
                return (false, nil, "the \(delivery.groupID == nil ? "release" : "group") no longer exists")
            }
            body = try AlertPayload(event: delivery.event, delivery: delivery, subject: subject, baseURL: baseURL)
                .body(webhook.format)
        } catch {
            return (false, nil, "cannot build the alert: \(error)")
        }
        return await post(body, event: delivery.event.rawValue, deliveryHeader: String(delivery.id), to: webhook)
    }

    /// What the delivery is about, as it is now; nil when it is gone (a group merged away, a
    /// release's days past retention).
    private func subject(of delivery: AlertDelivery, in scope: ProjectScope) async throws -> AlertPayload.Subject? {
        if let groupID = delivery.groupID {
            guard let group = try await store.group(id: groupID, in: scope) else { return nil }
            let latest = try await group.latestReportID.asyncMap { try await store.report(id: $0, in: scope) }
            return .group(group, latestReport: latest??.report)
        }
        guard let version = delivery.version, let previousVersion = delivery.previousVersion,
            let release = try await store.release(version: version, in: scope),
            let previous = try await store.release(version: previousVersion, in: scope)
        else { return nil }
        return .release(release, previous: previous)
    }

    /// POSTs `body` to the webhook, at the address `WebhookTargets` checked, signed when it has a secret.
    private func post(_ body: Data, event: String, deliveryHeader: String, to webhook: Webhook) async -> (
        delivered: Bool, status: Int?, error: String?
    ) {
        guard let host = URLComponents(string: webhook.url)?.host, !host.isEmpty else {
            return (false, nil, "the webhook's URL has no host")
        }
        let address: IPAddress
        switch await targets.check(host: host) {
        case .success(let checked): address = checked
        case .failure(let refusal):
            logger.warning("webhook \(webhook.id) not sent: \(refusal)")
            return (false, nil, Self.notDelivered)
        }
        var request = HTTPClientRequest(url: webhook.url)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        request.headers.add(name: "User-Agent", value: "blackbox-collector")
        request.headers.add(name: "X-Blackbox-Event", value: event)
        request.headers.add(name: "X-Blackbox-Delivery", value: deliveryHeader)
        if let secret = webhook.secret {
            request.headers.add(name: "X-Blackbox-Signature", value: AlertPayload.signature(of: body, secret: secret))
        }
        request.body = .bytes(ByteBuffer(bytes: body))
        let client = Self.makeClient(pinning: host, to: address)
        let outcome: (delivered: Bool, status: Int?, error: String?)
        do {
            let response = try await client.execute(
                request, timeout: .seconds(Int64(Self.requestTimeout.components.seconds)))
            _ = try? await response.body.collect(upTo: 64 << 10)
            let status = Int(response.status.code)
            outcome = ((200..<300).contains(status), status, nil)
        } catch {
            logger.info("webhook \(webhook.id) to \(address): \(String("\(error)".prefix(300)))")
            outcome = (false, nil, Self.notDelivered)
        }
        // Not cancellable: the client must be shut down whatever ended the delivery.
        await Task { try? await client.shutdown() }.value
        return outcome
    }
}

extension Optional {
    fileprivate func asyncMap<T>(_ transform: (Wrapped) async throws -> T) async rethrows -> T? {
        guard let self else { return nil }
        return try await transform(self)
    }
}
