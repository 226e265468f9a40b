#if ServiceLifecycle
    import Blackbox
    import Dispatch
    import Logging
    import Synchronization

    #if canImport(Glibc)
        import Glibc
    #endif

    /// What one watched group's services are doing, and the check a shutdown's bound sets off.
    final class GroupWatch: Sendable {
        enum Request: String, Sendable {
            case gracefulShutdown = "graceful shutdown"
            case cancellation
        }

        private struct ServiceState {
            let name: String
            var running = false
            var told: [(Request, ContinuousClock.Instant)] = []
        }

        private struct State {
            var services: [ServiceState]
            /// When the group began to shut down, and why (the first sign of it).
            var shutdown: (began: ContinuousClock.Instant, cause: String)?
            var reported = false
        }

        private let watchdog: ServiceWatchdog
        private let state: Mutex<State>
        private static let logger = Logger(label: "blackbox.services")

        init(_ watchdog: ServiceWatchdog, services: [String]) {
            self.watchdog = watchdog
            self.state = Mutex(State(services: services.map { ServiceState(name: $0) }))
        }

        func started(_ index: Int) {
            state.withLock { $0.services[index].running = true }
        }

        func told(_ index: Int, _ request: Request) {
            let now = ContinuousClock.now
            let name = state.withLock { state in
                state.services[index].told.append((request, now))
                return state.services[index].name
            }
            shutdownBegan("\(request.rawValue), told first to \(name)", at: now)
        }

        func ended(_ index: Int, throwing error: (any Error)?, groupKeepsRunning: Bool) {
            let (name, shuttingDown) = state.withLock { state in
                state.services[index].running = false
                return (state.services[index].name, state.shutdown != nil)
            }
            guard !shuttingDown else { return }
            if groupKeepsRunning {
                Blackbox.capture(ServiceEnded(service: name, error: error), level: .error)
            } else {
                shutdownBegan("service \(name) \(error.map { "threw \($0)" } ?? "returned")", at: .now)
            }
        }

        private func shutdownBegan(_ cause: String, at now: ContinuousClock.Instant) {
            let first = state.withLock { state in
                guard state.shutdown == nil else { return false }
                state.shutdown = (now, cause)
                return true
            }
            guard first else { return }
            // Off the cooperative pool: a group that does not finish may be holding all of its threads.
            // At most a year: a bound past that is never, and must not overflow the nanoseconds.
            let bound = min(max(watchdog.shutdownBound, .zero), .seconds(366 * 86_400)).components
            let nanoseconds = bound.seconds * 1_000_000_000 + bound.attoseconds / 1_000_000_000
            DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(Int(nanoseconds))) { [self] in
                checkFinished()
            }
        }

        /// After the bound: a report if services are still running, then the watchdog's action.
        private func checkFinished() {
            let now = ContinuousClock.now
            let stall: (cause: String, stuck: [String])? = state.withLock { state in
                let stuck = state.services.filter(\.running)
                guard let shutdown = state.shutdown, !stuck.isEmpty, !state.reported else { return nil }
                state.reported = true
                let notes = stuck.map { service in
                    let told = service.told.map { "\($0.0.rawValue) \(Self.seconds(now - $0.1)) s ago" }
                    return
                        "still running: \(service.name) (\(told.isEmpty ? "told nothing yet" : "told " + told.joined(separator: ", ")))"
                }
                return (shutdown.cause, notes)
            }
            guard let stall else { return }
            let names = stall.stuck.count
            let reason =
                "ServiceGroup did not finish within \(Self.seconds(watchdog.shutdownBound)) s of shutting down (\(stall.cause)): \(names) service\(names == 1 ? "" : "s") still running"
            let path = Blackbox.reportStall(reason, notes: stall.stuck)
            Self.logger.critical(
                "\(reason)",
                metadata: ["services": .array(stall.stuck.map { .string($0) }), "report": "\(path ?? "none")"])
            if case .exit(let status) = watchdog.onStall {
                Blackbox.prepareForImmediateExit()
                _exit(status)
            }
        }

        private static func seconds(_ duration: Duration) -> String {
            let duration = min(max(duration, .zero), .seconds(366 * 86_400))
            let tenths = duration.components.seconds * 10 + duration.components.attoseconds / 100_000_000_000_000_000
            return "\(tenths / 10).\(tenths % 10)"
        }
    }
#endif
