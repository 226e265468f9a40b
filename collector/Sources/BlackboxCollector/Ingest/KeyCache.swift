import Foundation
import Synchronization

/// Remembers recent key lookups for a second, so that a stream of uploads with the same key does not
/// cost a database read each. A revoked key stops working within `lifetime`.
final class KeyCache: Sendable {
    private let store: any CollectorStore
    private let lifetime: Duration
    private let entries = Mutex<[String: (key: APIKey?, expires: ContinuousClock.Instant)]>([:])

    init(store: any CollectorStore, lifetime: Duration = .seconds(1)) {
        self.store = store
        self.lifetime = lifetime
    }

    func authenticate(_ secret: String) async throws -> APIKey? {
        let now = ContinuousClock.now
        if let cached = entries.withLock({ $0[secret] }), cached.expires > now { return cached.key }
        let key = try await store.authenticate(secret: secret)
        entries.withLock { entries in
            if entries.count > 10_000 { entries.removeAll() }  // a flood of random keys must not grow it
            entries[secret] = (key, now + lifetime)
        }
        return key
    }
}
