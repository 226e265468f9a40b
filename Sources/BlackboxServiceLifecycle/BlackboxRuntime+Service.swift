#if ServiceLifecycle
    import Blackbox
    import ServiceLifecycle

    /// Blackbox as a service of a server's `ServiceGroup` (swift-otel's habit: the bootstrap hands back
    /// a service the app runs). It runs until the group's graceful shutdown, then shuts Blackbox down,
    /// waiting for delivery to end before logging stops. Put it first in the group's services: the
    /// group stops services in reverse order, so the others' shutdown is still logged.
    ///
    /// ```swift
    /// let blackbox = try Blackbox.start(configuration)
    /// let group = ServiceGroup(services: [blackbox, app], gracefulShutdownSignals: [.sigterm], logger: logger)
    /// try await group.run()
    /// ```
    extension BlackboxRuntime: Service {
        public func run() async throws {
            try? await gracefulShutdown()
            await shutdownAndWait()
        }
    }
#endif
