extension Blackbox {
    /// Writes a `hang` report of every thread's stack now, for a stall that an integration sees and
    /// no watched queue stands for (a `ServiceGroup` that does not finish shutting down). `notes`
    /// say what is stuck. The report's path, or nil without a running core or when it failed.
    package static func reportStall(_ reason: String, notes: [String]) -> String? {
        guard let core else { return nil }
        return HangReporter.write(reason: reason, unresponsiveThread: 0, notes: notes, core: core)
    }
}
