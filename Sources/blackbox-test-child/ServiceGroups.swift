#if ServiceLifecycle
    import Blackbox
    import BlackboxServiceLifecycle
    import Logging
    import ServiceLifecycle

    /// `service-stall`, `service-healthy`, `service-failure`: a ServiceGroup under the watchdog (exit 70
    /// on a stall; a 1 s bound, 5 s for the healthy group, which must not be taken for a stall on a
    /// loaded machine), shut down gracefully 300 ms after it starts, or by a service's failure. The
    /// stall's group holds a service that swallows its cancellation and graceful shutdown for 20 s,
    /// and one that returns at once while the group keeps running.
    enum ServiceGroupScenes {
        enum Scene: String {
            case stall = "service-stall"
            case healthy = "service-healthy"
            case failure = "service-failure"
        }

        struct Polite: Service {
            func run() async throws { try? await gracefulShutdown() }
        }

        struct Stubborn: Service {
            func run() async throws {
                let end = ContinuousClock.now + .seconds(20)
                while ContinuousClock.now < end { try? await Task.sleep(for: .milliseconds(20)) }
            }
        }

        struct Quitter: Service {
            func run() async throws {}
        }

        struct Failing: Service {
            struct Failure: Error {}
            func run() async throws {
                try await Task.sleep(for: .milliseconds(200))
                throw Failure()
            }
        }

        static func services(_ scene: Scene) -> [ServiceGroupConfiguration.ServiceConfiguration] {
            switch scene {
            case .healthy:
                [.init(service: Polite(), serviceName: "polite")]
            case .stall:
                [
                    .init(service: Polite(), serviceName: "polite"),
                    .init(service: Stubborn(), serviceName: "stubborn"),
                    .init(service: Quitter(), successTerminationBehavior: .ignore, serviceName: "quitter"),
                ]
            case .failure:
                // Its failure cancels the group; the stubborn service swallows the cancellation.
                [
                    .init(service: Stubborn(), serviceName: "stubborn"),
                    .init(service: Failing(), serviceName: "failing"),
                ]
            }
        }

        static func run(_ scene: Scene) async {
            let bound: Duration = scene == .healthy ? .seconds(5) : .seconds(1)
            let configuration = ServiceWatchdog(shutdownBound: bound, onStall: .exit(70)).watching(
                ServiceGroupConfiguration(services: services(scene), logger: Logger(label: "group")))
            let group = ServiceGroup(configuration: configuration)
            let trigger = Task {
                guard scene != .failure else { return }
                try? await Task.sleep(for: .milliseconds(300))
                say("shutting down")
                await group.triggerGracefulShutdown()
            }
            do {
                try await group.run()
                say("group finished")
            } catch {
                say("group threw \(error)")
            }
            await trigger.value
        }
    }
#endif
