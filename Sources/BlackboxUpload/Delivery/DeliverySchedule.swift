#if Upload
    import Blackbox
    import Synchronization

    /// When a delivery runs its passes (the collector's and Sentry's alike): one at once, then after
    /// announcements (debounced, so a burst makes one pass) and every `interval`, one at a time,
    /// until the task is cancelled.
    struct DeliverySchedule: Sendable {
        var interval: Duration?
        var debounce: Duration
        let progress: DeliveryProgress

        func run(events: AsyncStream<DeliveryEvent>, pass: @escaping @Sendable () async -> Void) async {
            progress.startPassFinished.store(false, ordering: .relaxed)
            await pass()
            progress.startPassFinished.store(true, ordering: .releasing)
            let (wakeups, wakeup) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
            await withTaskGroup(of: Void.self) { group in
                if let interval {
                    group.addTask {
                        while !Task.isCancelled {
                            try? await Task.sleep(for: interval)
                            wakeup.yield()
                        }
                    }
                }
                group.addTask {
                    for await _ in events { wakeup.yield() }
                }
                // Ends when the task is cancelled (the stream ends its iteration then).
                for await _ in wakeups {
                    try? await Task.sleep(for: debounce)
                    guard !Task.isCancelled else { break }
                    await pass()
                }
                group.cancelAll()
            }
        }

        /// Waits until the first pass of the latest `run` has finished (true), at most `timeout`.
        func waitForStartPass(timeout: Duration) async -> Bool {
            let deadline = ContinuousClock.now + timeout
            while !progress.startPassFinished.load(ordering: .acquiring) {
                guard ContinuousClock.now < deadline else { return false }
                try? await Task.sleep(for: .milliseconds(50))
            }
            return true
        }
    }

    /// Shared by the copies of one delivery value (the configuration holds one, the app may hold
    /// another).
    final class DeliveryProgress: Sendable {
        let startPassFinished = Atomic<Bool>(false)
    }
#endif
