#if ServiceLifecycle
    import Blackbox
    import ServiceLifecycle

    /// Watches a `ServiceGroup` for the half-dead state nothing else reports
    /// (swift-service-lifecycle#207: one service ended, the others swallowed the cancellation and the
    /// server kept half-working). Once the group begins to shut down — a graceful shutdown, a
    /// cancellation, or a service whose end shuts the group down — it must finish within
    /// `shutdownBound`; if services are still running then, Blackbox writes a `hang` report of every
    /// thread's stack that names the services still running and what each was told, logs it, and
    /// does what `onStall` says. A service that ends while the group keeps running (its termination
    /// behavior `.ignore`) is captured as a `ServiceEnded` error.
    ///
    /// ```swift
    /// let configuration = ServiceWatchdog(shutdownBound: .seconds(30), onStall: .exit(70)).watching(
    ///     ServiceGroupConfiguration(services: [blackbox, app], gracefulShutdownSignals: [.sigterm], logger: logger))
    /// try await ServiceGroup(configuration: configuration).run()
    /// ```
    public struct ServiceWatchdog: Sendable {
        public enum Action: Sendable, Equatable {
            /// The report and a critical log line; the process goes on.
            case log
            /// The report and the line, the log flushed, then the process exits with this status at
            /// once (no exit handlers: a half-dead process may hold what they wait for), so that a
            /// supervisor starts it again.
            case exit(Int32)
        }

        /// How long the group may take to finish once it began to shut down.
        public var shutdownBound: Duration
        public var onStall: Action

        public init(shutdownBound: Duration = .seconds(30), onStall: Action = .log) {
            self.shutdownBound = shutdownBound
            self.onStall = onStall
        }

        /// `configuration` with each service wrapped so that the watchdog sees it end and hears the
        /// group's shutdown; names and termination behaviors are kept.
        public func watching(_ configuration: ServiceGroupConfiguration) -> ServiceGroupConfiguration {
            let watch = GroupWatch(self, services: configuration.services.map(\.serviceName))
            var watched = configuration
            watched.services = configuration.services.enumerated().map { index, service in
                ServiceGroupConfiguration.ServiceConfiguration(
                    service: WatchedService(
                        service.service, index: index, watch: watch,
                        // `TerminationBehavior` offers no comparison; its description names the case.
                        keepsGroupRunning: (
                            success: service.successTerminationBehavior.description == "ignore",
                            failure: service.failureTerminationBehavior.description == "ignore"
                        )),
                    successTerminationBehavior: service.successTerminationBehavior,
                    failureTerminationBehavior: service.failureTerminationBehavior,
                    serviceName: service.serviceName)
            }
            return watched
        }
    }

    /// A service's `run` ended while its group kept running (the service's termination behavior is
    /// `.ignore`): captured so that it shows as an issue, once per service and interval (the service
    /// is the error's throw site, which the capture's rate limit and the collector's grouping use).
    public struct ServiceEnded: ReportableError, CustomStringConvertible {
        public let service: String
        /// What `run` threw, if it threw.
        public let error: (any Error)?

        public var description: String {
            let outcome = error.map { "threw \($0)" } ?? "returned"
            return "service \(service) \(outcome) while its group keeps running"
        }

        public var reportDomain: String { "ServiceLifecycle" }
        /// 1: `run` returned; 2: it threw.
        public var reportCode: Int { error == nil ? 1 : 2 }
        public var reportUserInfo: [String: String] { ["service": service] }
        public var reportThrowSite: ThrowSite? { ThrowSite(fileID: "service \(service)", line: 0, function: "run()") }
    }
#endif
