import BlackboxTestSupport
import Foundation
import Logging
import Synchronization
import Testing

@testable import Blackbox

#if ServiceLifecycle
    import BlackboxServiceLifecycle
    import ServiceLifecycle
    import ServiceLifecycleTestKit
#endif

@Suite("BlackboxRuntime: start and shutdown", .serialized)
struct ShutdownOrderTests {
    /// A delivery that logs through the core as it ends: the line reaches the file only if the core
    /// was still running when delivery ended.
    final class LoggingDelivery: DiagnosticsDelivery {
        let core = Mutex<LoggingCore?>(nil)
        let stops = Atomic<Int>(0)

        func run(_ context: DeliveryContext, events: AsyncStream<DeliveryEvent>) async {
            core.withLock { $0 = context.core }
            for await _ in events {}
            stops.add(1, ordering: .relaxed)
            Logger(label: "delivery") { BlackboxLogHandler(label: $0, core: context.core) }.info("delivery stopping")
        }
    }

    @Test("delivery ends first, while logging still runs; then the core drains; start works again")
    func deliveryStopsBeforeTheCore() async throws {
        let directory = TemporaryDirectory()
        let delivery = LoggingDelivery()
        var configuration = BlackboxConfiguration(appName: "order", directory: directory.path)
        configuration.sinks = [.file]
        configuration.crashReporting.enabled = false
        configuration.delivery = delivery
        try Blackbox.start(configuration, bootstrapLogging: false)
        let deadline = ContinuousClock.now + .seconds(20)
        while delivery.core.withLock({ $0 }) == nil && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(10))
        }
        try #require(delivery.core.withLock { $0 } != nil, "delivery was started")
        let runtime = try #require(Blackbox.current)
        await runtime.shutdownAndWait()
        #expect(delivery.stops.load(ordering: .relaxed) == 1)
        let log = try String(contentsOfFile: "\(directory.path)/logs/order.log", encoding: .utf8)
        #expect(log.contains("delivery stopping"), "\(log)")

        try Blackbox.start(configuration, bootstrapLogging: false)
        Blackbox.shutdown()
    }

    /// Records when it ran and when it ended, in order.
    final class RecordingDelivery: DiagnosticsDelivery {
        let events = Mutex<[String]>([])
        func run(_ context: DeliveryContext, events announced: AsyncStream<DeliveryEvent>) async {
            events.withLock { $0.append("started") }
            for await _ in announced {}
            events.withLock { $0.append("stop") }
        }
    }

    @Test("a shutdown racing start-up's background thread never leaves delivery started after it stopped")
    func shutdownRacingStartUp() async throws {
        let directory = TemporaryDirectory()
        var configuration = BlackboxConfiguration(appName: "race", directory: directory.path)
        configuration.sinks = [.file]
        configuration.crashReporting.enabled = false
        var orders: Set<[String]> = []
        for attempt in 0..<40 {
            let delivery = RecordingDelivery()
            configuration.delivery = delivery
            let runtime = try Blackbox.start(configuration, bootstrapLogging: false)
            #expect(Blackbox.current === runtime)
            // From at once to 2 ms later: before, during and after the thread starts delivery.
            usleep(UInt32(attempt % 9) * 250)
            runtime.shutdown()
            #expect(Blackbox.current == nil)
            #expect(!runtime.isRunning)
            // The start-up thread may still be on its way: give it time to (wrongly) start delivery,
            // and a started delivery time to see its cancellation.
            try await Task.sleep(for: .milliseconds(30))
            var events = delivery.events.withLock { $0 }
            let deadline = ContinuousClock.now + .seconds(20)
            while events == ["started"] && ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(10))
                events = delivery.events.withLock { $0 }
            }
            #expect(events == [] || events == ["started", "stop"], "\(events)")
            orders.insert(events)
        }
        // Which orders occurred depends on scheduling; every one seen was a correct one.
        print("shutdown racing start-up: orders seen \(orders.sorted { $0.count < $1.count })")
    }

    @Test("shutdown is idempotent, and a stopped runtime is not the current one")
    func shutdownTwice() async throws {
        let directory = TemporaryDirectory()
        var configuration = BlackboxConfiguration(appName: "twice", directory: directory.path)
        configuration.sinks = [.file]
        configuration.crashReporting.enabled = false
        let delivery = RecordingDelivery()
        configuration.delivery = delivery
        let first = try Blackbox.start(configuration, bootstrapLogging: false)
        first.shutdown()
        let second = try Blackbox.start(configuration, bootstrapLogging: false)
        first.shutdown()  // must not stop the runtime that replaced it
        #expect(Blackbox.current === second)
        #expect(second.isRunning)
        Blackbox.shutdown()
        Blackbox.shutdown()
        #expect(Blackbox.current == nil)
        // Each runtime's delivery, if its start-up thread got to start it before the shutdown, ended.
        func unended(_ events: [String]) -> Int {
            events.filter { $0 == "started" }.count - events.filter { $0 == "stop" }.count
        }
        let deadline = ContinuousClock.now + .seconds(20)
        while unended(delivery.events.withLock { $0 }) != 0 && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(10))
        }
        let events = delivery.events.withLock { $0 }
        #expect(unended(events) == 0 && events.filter { $0 == "started" }.count <= 2, "\(events)")
    }

    #if ServiceLifecycle
        @Test("as a service of a ServiceGroup: runs until graceful shutdown, ends delivery before logging, stops")
        func asAService() async throws {
            let directory = TemporaryDirectory()
            defer { directory.remove() }
            var configuration = BlackboxConfiguration(appName: "service", directory: directory.path)
            configuration.sinks = [.file]
            configuration.crashReporting.enabled = false
            let delivery = LoggingDelivery()
            configuration.delivery = delivery
            let runtime = try Blackbox.start(configuration, bootstrapLogging: false)
            try await testGracefulShutdown { shutdown in
                async let running: Void = runtime.run()
                let deadline = ContinuousClock.now + .seconds(30)
                while delivery.core.withLock({ $0 }) == nil && ContinuousClock.now < deadline {
                    try await Task.sleep(for: .milliseconds(10))
                }
                #expect(runtime.isRunning)
                shutdown.triggerGracefulShutdown()
                try await running
            }
            #expect(!runtime.isRunning && Blackbox.current == nil)
            #expect(delivery.stops.load(ordering: .relaxed) == 1)
            let log = try String(contentsOfFile: "\(directory.path)/logs/service.log", encoding: .utf8)
            #expect(log.contains("delivery stopping"), "\(log)")
        }
    #endif
}
