import NIOCore
import Synchronization

/// Whether the bucket answers, for `/ready`: one `HEAD` of the bucket at most once a second, however
/// often the probe is asked (it is public, and a load balancer asks every few seconds), and within a
/// few seconds, so a store that is down turns readiness red while the probe still waits for it.
final class BucketHealth: Sendable {
    let client: S3Client
    static let interval: Duration = .seconds(1)
    static let timeout = TimeAmount.seconds(3)

    private struct State {
        var checkedAt: ContinuousClock.Instant?
        var failure: S3Error?
    }

    private let state = Mutex(State())

    init(_ client: S3Client) {
        self.client = client
    }

    /// Why the bucket cannot be used now; nil when it answered.
    func failure() async -> S3Error? {
        let now = ContinuousClock.now
        let (due, last) = state.withLock { state -> (Bool, S3Error?) in
            if let checkedAt = state.checkedAt, now - checkedAt < Self.interval { return (false, state.failure) }
            state.checkedAt = now
            return (true, state.failure)
        }
        guard due else { return last }
        var probe = client
        probe.timeout = Self.timeout
        let failure: S3Error?
        do {
            try await probe.checkBucket()
            failure = nil
        } catch let error as S3Error {
            failure = error
        } catch {
            failure = S3Error(operation: "HEAD bucket", status: nil, code: nil, message: "\(error)")
        }
        state.withLock { $0.failure = failure }
        return failure
    }
}
