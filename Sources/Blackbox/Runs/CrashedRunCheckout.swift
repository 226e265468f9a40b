import BlackboxFormat

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif
#if canImport(Glibc)
    import Glibc
#endif

/// A crashed run, checked out for delivery at crash time (`blackbox deliver-crash`, while the process
/// waits): the sessions to send with its report, and, once they are stored, the accounting the next
/// launch would otherwise do. An ephemeral container has no next launch, so the crashed run is
/// counted now, with the runs that ended before it; after delivery nothing may be sent or counted
/// twice. The rule is the next launch's (`UnseenDeaths`: a run that left a crash report ended
/// `crashed`): both build the run's session with `RunRecord.session(ending:at:)`.
package struct CrashedRunCheckout {
    package let layout: DiagnosticsDirectory
    /// The runs that ended before (`runs/ended/`) and the crashed run itself.
    package let sessions: [EndedSession]
    private let rawReport: String
    private let endedSessionFiles: [String]
    private let run: (path: String, record: RunRecord)?
    private let pid: Int32?

    /// Nil when `rawReport` is not in a diagnostics directory's `crashes/pending/`.
    package init?(rawReport: String, parsed: RawCrashReport) {
        guard let layout = DiagnosticsDirectory(containingPendingReport: rawReport) else { return nil }
        self.layout = layout
        self.rawReport = rawReport
        self.pid = parsed.pid
        let run = parsed.pid.flatMap { pid in RunRecord.all(in: layout).first { $0.record.pid == pid } }
        self.run = run
        let ended = EndedSession.pending(in: layout)
        self.endedSessionFiles = ended.paths
        let crashTime = parsed.timeSeconds.map { Date(timeIntervalSince1970: TimeInterval($0)) } ?? Date()
        self.sessions =
            ended.sessions + (run.map { [$0.record.session(ending: .crashed, at: crashTime, in: layout)] } ?? [])
    }

    /// The report and its sessions are stored: the counted sessions go, the crashed run's record goes
    /// (a record left behind would be taken for a kill; without one, a `crashed` marker says what
    /// happened to the pid), and the raw report goes, durably.
    package func commitDelivered() {
        for path in endedSessionFiles { unlink(path) }
        if let run {
            unlink(run.path)
            unlink(RunRecord.markerPath(.hung, pid: run.record.pid, in: layout))
            RequestTally.remove(pid: run.record.pid, in: layout)
        } else if let pid {
            RunRecord.mark(.crashed, pid: pid, in: layout)
        }
        unlink(rawReport)
        DurableFile.syncDirectory(containing: rawReport)
    }
}
