/// Something that takes finished diagnostics (outbox reports, log archives) off the machine.
///
/// `Blackbox` itself only defines this hook, so an app that just logs links no HTTP client:
/// `BlackboxUpload.CollectorUpload` implements it, and `BlackboxConfiguration.delivery` plugs it in.
/// Every method is called on a Blackbox background thread and must return quickly (start work of
/// its own for anything slow).
public protocol DiagnosticsDelivery: Sendable {
    /// Once per `Blackbox.start`, after the reports earlier runs left behind have been processed into
    /// the outbox (or at once when crash processing is off).
    func started(_ context: DeliveryContext)
    /// A log archive was finished (rotated, and compressed when compression is on).
    func archiveFinished(path: String)
    /// A non-fatal report was written to the outbox.
    func reportWritten(path: String)
    /// `Blackbox.shutdown` is stopping: end background work now (work in flight may be cancelled;
    /// what was not delivered must stay where the next start finds it). Called before the logging
    /// core stops.
    func stop()
}

extension DiagnosticsDelivery {
    public func archiveFinished(path: String) {}
    public func reportWritten(path: String) {}
    public func stop() {}
}

/// What a delivery needs to know about the running app.
public struct DeliveryContext: Sendable {
    public var configuration: BlackboxConfiguration
    /// The running core: flush it before reading the active log file.
    public var core: LoggingCore

    public init(configuration: BlackboxConfiguration, core: LoggingCore) {
        self.configuration = configuration
        self.core = core
    }
    /// The diagnostics directory (`configuration.directory`).
    public var directory: String { configuration.directory }
}
