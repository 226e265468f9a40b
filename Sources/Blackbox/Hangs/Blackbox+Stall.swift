extension Blackbox {
    /// Writes a `hang` report of every thread's stack now, for a stall that an integration sees and
    /// no watched queue stands for (a `ServiceGroup` that does not finish shutting down). `notes`
    /// say what is stuck. The report's path, or nil without a running core or when it failed.
    package static func reportStall(_ reason: String, notes: [String]) -> String? {
        guard let core else { return nil }
        return HangReporter.write(reason: reason, unresponsiveThread: 0, notes: notes, stall: true, core: core)
    }
}

extension Blackbox {
    /// Before an integration ends the process at once (`_exit`, no exit handlers): the reports still
    /// waiting for their frames' names are published (unnamed past `timeout`) and the log is flushed,
    /// so that what was captured before is in the outbox and the file.
    package static func prepareForImmediateExit(timeout: Duration = .seconds(2)) {
        ReportNaming.shared.finish(within: timeout)
        _ = flush(timeout: timeout)
    }
}
