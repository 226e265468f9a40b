import CollectorTestSupport
import Crypto
import Foundation
import Hummingbird
import Synchronization

/// A real HTTP server on loopback that records what webhooks POST to `/hook`; it can be stopped (its
/// port then refuses connections) and started again on the same port.
final class WebhookReceiver: Sendable {
    struct Received: Sendable {
        var event: String
        var delivery: String
        var signature: String?
        var body: Data
        var json: [String: Any] { ((try? JSONSerialization.jsonObject(with: body)) as? [String: Any]) ?? [:] }
    }

    private let received = Mutex<[Received]>([])
    private let running = Mutex<Task<Void, any Error>?>(nil)
    private let boundPort = Atomic<Int>(0)
    var port: Int { boundPort.load(ordering: .relaxed) }
    var url: String { "http://127.0.0.1:\(port)/hook" }

    var all: [Received] { received.withLock { $0 } }

    /// `port` 0: one is chosen at the first start.
    init(port: Int = 0) { boundPort.store(port, ordering: .relaxed) }

    /// Starts on a free port from `PostgresServer.fixturePorts` (see `stop()`), or on the port it had.
    func start() async throws {
        if port != 0 { return try await start(on: port) }
        var lastError: (any Error)?
        for _ in 0..<3 {
            do {
                return try await start(on: PostgresServer.freePort())
            } catch {
                lastError = error  // another fixture bound it first
            }
        }
        throw lastError ?? CancellationError()
    }

    private func start(on port: Int) async throws {
        let router = Router()
        router.post("hook") { [self] request, _ in
            let body = try await request.body.collect(upTo: 1 << 20)
            func header(_ name: String) -> String? {
                request.headers.first { $0.name.canonicalName == name }?.value
            }
            received.withLock {
                $0.append(
                    Received(
                        event: header("x-blackbox-event") ?? "", delivery: header("x-blackbox-delivery") ?? "",
                        signature: header("x-blackbox-signature"), body: Data(buffer: body)))
            }
            return Response(status: .ok)
        }
        let (ports, bound) = AsyncStream.makeStream(of: Int.self)
        let app = Application(
            router: router, configuration: .init(address: .hostname("127.0.0.1", port: port)),
            onServerRunning: { channel in bound.yield(channel.localAddress?.port ?? 0) })
        // A failed bind ends the service with an error: the stream ends too, and start throws it
        // instead of waiting for a port forever.
        let task = Task {
            defer { bound.finish() }
            try await app.runService(gracefulShutdownSignals: [])
        }
        running.withLock { $0 = task }
        for await value in ports {
            boundPort.store(value, ordering: .relaxed)
            return
        }
        try await task.value
        throw CancellationError()
    }

    /// Frees the port, so connections to it are refused. A restart binds the same port again; the
    /// receiver's port is outside the ephemeral range so that no test server binding port 0 takes it
    /// meanwhile (one did, and answered a "down" receiver's alerts with 404).
    func stop() async {
        let task = running.withLock { $0 }
        task?.cancel()
        _ = await task?.result
    }

    /// Waits up to `timeout` until `predicate` holds for what was received.
    func wait(for timeout: Duration, until predicate: ([Received]) -> Bool) async throws -> [Received] {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            let now = all
            if predicate(now) { return now }
            try await Task.sleep(for: .milliseconds(50))
        }
        return all
    }

    /// `sha256=<hex HMAC>` as a receiver computes it to check a delivery.
    static func expectedSignature(_ body: Data, secret: String) -> String {
        let code = HMAC<SHA256>.authenticationCode(for: body, using: SymmetricKey(data: Data(secret.utf8)))
        return "sha256=" + code.map { String(format: "%02x", $0) }.joined()
    }
}
