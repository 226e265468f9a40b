import Dispatch
import Synchronization

/// Something that must stay responsive, as the watchdog sees it: when it last showed life, and on
/// which thread.
final class HangTarget: Sendable {
    enum Source: Sendable {
        /// The app calls `HangHeartbeat.beat()`.
        case heartbeat
        /// The watchdog sends the queue a block and waits for it to run.
        case queue(DispatchQueue)
    }

    let name: String
    let deadline: Duration
    let source: Source
    /// Monotonic nanoseconds of the last sign of life (a beat, or a ping block that ran).
    let lastAlive = Atomic<UInt64>(monotonicNanoseconds())
    /// The kernel id of the thread that last showed it (0: not known yet).
    let lastThread = Atomic<UInt32>(0)
    /// A queue target: when the ping now waiting was sent (0: none waiting).
    let pingSent = Atomic<UInt64>(0)
    /// Set by the watchdog while an episode lasts: its start (0: responsive).
    let hungSince = Atomic<UInt64>(0)

    init(name: String, deadline: Duration, source: Source) {
        self.name = name
        self.deadline = deadline
        self.source = source
    }

    func showedLife() {
        lastAlive.store(monotonicNanoseconds(), ordering: .releasing)
        lastThread.store(currentThreadID(), ordering: .relaxed)
    }

    /// For a queue: sends a ping unless one is waiting. Called by the watchdog.
    func ping(now: UInt64) {
        guard case .queue(let queue) = source,
            pingSent.compareExchange(expected: 0, desired: now, ordering: .acquiringAndReleasing).exchanged
        else { return }
        queue.async { [self] in
            showedLife()
            pingSent.store(0, ordering: .releasing)
        }
    }

    /// How long it has been unresponsive at `now` (0 when it is responsive).
    func unresponsive(now: UInt64) -> UInt64 {
        switch source {
        case .heartbeat:
            let last = lastAlive.load(ordering: .acquiring)
            return now > last ? now - last : 0
        case .queue:
            let sent = pingSent.load(ordering: .acquiring)
            return sent != 0 && now > sent ? now - sent : 0
        }
    }
}

/// What an app calls from the loop the watchdog guards (`Blackbox.hangHeartbeat`): a missed deadline
/// between two beats is a hang. A beat is two atomic stores and a clock read.
public struct HangHeartbeat: Sendable {
    let target: HangTarget
    /// The watchdog of the runtime that was running when the heartbeat was made (nil: none was, and
    /// nothing watches it).
    let watchdog: HangWatchdog?

    public func beat() { target.showedLife() }

    /// Stops watching (for a loop that ends on purpose).
    public func stop() { watchdog?.remove(target) }
}
