import Foundation

/// Runs blocking work on a thread of its own: the tests run in parallel on a cooperative pool of one
/// thread per core, which blocking work would take from the in-process servers and every other test,
/// and work whose pace matters must not wait for the pool either.
public func offThePool<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try work() }) }.start()
    }
}
