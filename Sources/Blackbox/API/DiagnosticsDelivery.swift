/// Something that takes finished diagnostics (outbox reports, log archives) off the machine.
///
/// `Blackbox` itself only defines this hook, so an app that just logs links no HTTP client:
/// `BlackboxUpload.CollectorUpload` implements it, and `BlackboxConfiguration.delivery` plugs it in.
/// The running `BlackboxRuntime` runs it in one background task of its own (swift-service-lifecycle's
/// habit: a `run()`, no callbacks, no tasks started by the delivery itself).
public protocol DiagnosticsDelivery: Sendable {
    /// Delivers until the task is cancelled (`Blackbox.shutdown`): what is there at once, then what
    /// `events` announces, and on a schedule of its own. Started after the reports earlier runs left
    /// behind were processed into the outbox. Cancellation may interrupt work in flight; what was not
    /// delivered must stay where the next start finds it.
    func run(_ context: DeliveryContext, events: AsyncStream<DeliveryEvent>) async
}

/// What a running delivery is told about.
public enum DeliveryEvent: Sendable, Equatable {
    /// A log archive was finished (rotated, and compressed when compression is on).
    case archiveFinished(path: String)
    /// A non-fatal report (assertion, captured error, hang) was written to the outbox.
    case reportWritten(path: String)
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

/// The announcements of one core to its delivery: finished archives and written reports. Buffered
/// (the newest 64) while no delivery runs yet; a delivery only needs to know that something is new.
final class DeliveryAnnouncements: Sendable {
    let events: AsyncStream<DeliveryEvent>
    private let continuation: AsyncStream<DeliveryEvent>.Continuation

    init() {
        (events, continuation) = AsyncStream.makeStream(of: DeliveryEvent.self, bufferingPolicy: .bufferingNewest(64))
    }

    func announce(_ event: DeliveryEvent) { continuation.yield(event) }

    /// No more announcements: a delivery waiting for one ends its wait.
    func finish() { continuation.finish() }
}
