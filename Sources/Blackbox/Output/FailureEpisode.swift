import BlackboxSystem

/// A time during which the log file cannot be written (a full disk, a revoked permission), as a
/// value the writer feeds with outcomes and reads decisions from. The contract it keeps: every line is
/// either written or counted as lost, the failure is announced once, and the episode ends only when
/// the "lost N lines" notice itself has been written.
struct FailureEpisode: Equatable {
    /// Lines (and dropped lines whose notice was in a failed batch) not written so far.
    private(set) var lostLines: UInt64 = 0
    /// The last write error; 0 while no episode is going on.
    private(set) var error: Int32 = 0

    var isOngoing: Bool { error != 0 }

    /// A batch could not be written: `lines` are lost. True when this starts the episode (announce it).
    mutating func batchFailed(lines: UInt64, error: Int32) -> Bool {
        let starts = !isOngoing
        lostLines += lines
        self.error = error
        return starts
    }

    /// The notice to write (and see written) before the episode may end; nil when nothing was lost.
    var resumeNotice: String? {
        guard lostLines > 0 else { return nil }
        return "lost \(lostLines) log lines while the log file could not be written (\(errnoDescription(error)))"
    }

    /// The notice was written: the episode is over. Returns how many lines it lost.
    mutating func end() -> UInt64 {
        defer { self = FailureEpisode() }
        return lostLines
    }
}
