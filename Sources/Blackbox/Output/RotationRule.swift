/// When the active log file rotates, as pure decisions over sizes and clocks (the writer applies
/// them; tests feed them any numbers, no disk). A line is never split across files.
struct RotationRule: Equatable {
    var maxFileSize: UInt64
    /// Nanoseconds a non-empty file may stay active; nil: no time-based rotation.
    var interval: UInt64?

    init(_ policy: RotationPolicy) {
        maxFileSize = policy.maxFileSize
        interval = policy.interval?.nanoseconds
    }

    init(maxFileSize: UInt64, interval: UInt64?) {
        self.maxFileSize = maxFileSize
        self.interval = interval
    }

    /// Whether the file must rotate before a line of `lineBytes` joins the `batchedBytes` already
    /// formatted for it: when together they would pass the limit. An empty file with an empty batch
    /// takes the line whatever its size (else a line longer than the limit could never be written).
    func rotatesBefore(lineBytes: Int, fileSize: UInt64, batchedBytes: Int) -> Bool {
        guard fileSize > 0 || batchedBytes > 0 else { return false }
        return fileSize + UInt64(batchedBytes) + UInt64(lineBytes) > maxFileSize
    }

    /// Whether a non-empty file that became active at `fileStart` is due for rotation at `now`.
    func isDue(fileSize: UInt64, fileStart: UInt64, now: UInt64) -> Bool {
        guard let delay = nanosecondsUntilDue(fileSize: fileSize, fileStart: fileStart, now: now) else { return false }
        return delay == 0
    }

    /// How long until the file is due (0: now); nil when it never is (empty, or no interval).
    func nanosecondsUntilDue(fileSize: UInt64, fileStart: UInt64, now: UInt64) -> UInt64? {
        guard fileSize > 0, let interval else { return nil }
        let due = fileStart &+ interval
        return due > now ? due - now : 0
    }
}
