#if ServiceLifecycle
    import ServiceLifecycle

    /// A group's service as the watchdog runs it: tells the watch when it starts, when the group asks
    /// it to shut down or cancels it, and how it ended.
    struct WatchedService: Service, CustomStringConvertible {
        let service: any Service
        let index: Int
        let watch: GroupWatch
        let keepsGroupRunning: (success: Bool, failure: Bool)

        init(_ service: any Service, index: Int, watch: GroupWatch, keepsGroupRunning: (success: Bool, failure: Bool)) {
            self.service = service
            self.index = index
            self.watch = watch
            self.keepsGroupRunning = keepsGroupRunning
        }

        var description: String { "\(service)" }

        func run() async throws {
            let (watch, index) = (watch, index)
            watch.started(index)
            do {
                try await withTaskCancellationHandler {
                    try await withGracefulShutdownHandler {
                        try await service.run()
                    } onGracefulShutdown: {
                        watch.told(index, .gracefulShutdown)
                    }
                } onCancel: {
                    watch.told(index, .cancellation)
                }
            } catch {
                watch.ended(index, throwing: error, groupKeepsRunning: keepsGroupRunning.failure)
                throw error
            }
            watch.ended(index, throwing: nil, groupKeepsRunning: keepsGroupRunning.success)
        }
    }
#endif
