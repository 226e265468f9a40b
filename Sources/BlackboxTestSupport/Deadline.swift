import Synchronization

/// A test step that did not end within its deadline.
public struct DeadlineExceeded: Error, CustomStringConvertible {
    public let what: String
    public let deadline: Duration
    public var description: String { "\(what) did not end within \(deadline)" }
}

/// Runs `body` and returns what it returns, or throws `DeadlineExceeded` once `deadline` has passed:
/// the body's task is then cancelled and left behind. A task group would wait for a child that
/// ignores cancellation (a query waiting for a connection that never comes), and the whole run
/// with it; this fails the one test, naming what it waited for.
public func withDeadline<T: Sendable>(
    _ deadline: Duration, _ what: String, _ body: @escaping @Sendable () async throws -> T
) async throws -> T {
    try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
        let once = ResumeOnce(continuation)
        let work = Task { _ = once.resume(with: await Result { try await body() }) }
        Task {
            try? await Task.sleep(for: deadline)
            if once.resume(with: .failure(DeadlineExceeded(what: what, deadline: deadline))) { work.cancel() }
        }
    }
}

/// A continuation resumed by whichever comes first.
private final class ResumeOnce<T: Sendable>: Sendable {
    private let continuation: Mutex<CheckedContinuation<T, any Error>?>

    init(_ continuation: CheckedContinuation<T, any Error>) { self.continuation = Mutex(continuation) }

    /// Whether this call resumed it.
    func resume(with result: Result<T, any Error>) -> Bool {
        guard let continuation = continuation.withLock({ $0.take() }) else { return false }
        continuation.resume(with: result)
        return true
    }
}

extension Result where Failure == any Error {
    fileprivate init(catching body: () async throws -> Success) async {
        do {
            self = .success(try await body())
        } catch {
            self = .failure(error)
        }
    }
}
