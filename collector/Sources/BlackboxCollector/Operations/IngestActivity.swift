import Foundation
import Synchronization

/// Whether uploads are arriving, for background work that steps back while they are (the log
/// indexer, the symbolication service): acknowledging an upload is what clients wait for. Never for
/// longer than a deferral limit, so that under sustained load the background work still gets done.
final class IngestActivity: Sendable {
    /// Uploads being received now, and when the last one started or ended (uptime in nanoseconds).
    private let uploadsInFlight = Atomic<Int>(0)
    private let lastIngest = Atomic<UInt64>(0)
    /// An upload this recent (or one in flight) means ingest is busy.
    static let busyWindow: Duration = .milliseconds(50)

    /// Called as each upload starts and as it ends.
    func noteUpload(started: Bool) {
        uploadsInFlight.add(started ? 1 : -1, ordering: .relaxed)
        lastIngest.store(DispatchTime.now().uptimeNanoseconds, ordering: .relaxed)
    }

    var isBusy: Bool {
        if uploadsInFlight.load(ordering: .relaxed) > 0 { return true }
        let last = lastIngest.load(ordering: .relaxed)
        return last != 0 && DispatchTime.now().uptimeNanoseconds - last < Self.nanoseconds(Self.busyWindow)
    }

    /// Sleeps while uploads are arriving, until `maxDeferral` after the first time it had to (kept in
    /// `deferringSince` across calls of one pass), or until `stopping` says so.
    func stepBack(
        deferringSince: inout ContinuousClock.Instant?, maxDeferral: Duration, stopping: () -> Bool
    ) async {
        while isBusy && !stopping() {
            let since = deferringSince ?? .now
            deferringSince = since
            if since.duration(to: .now) >= maxDeferral { return }
            try? await Task.sleep(for: Self.busyWindow)
        }
    }

    private static func nanoseconds(_ duration: Duration) -> UInt64 {
        UInt64(duration.components.seconds) * 1_000_000_000 + UInt64(duration.components.attoseconds / 1_000_000_000)
    }
}
