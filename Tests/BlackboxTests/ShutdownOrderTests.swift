import BlackboxTestSupport
import Foundation
import Logging
import Synchronization
import Testing

@testable import Blackbox

@Suite("BlackboxRuntime: start and shutdown", .serialized)
struct ShutdownOrderTests {
    /// A delivery that logs through the core from `stop`: the line reaches the file only if the core
    /// was still running when delivery was stopped.
    final class LoggingDelivery: DiagnosticsDelivery {
        let core = Mutex<LoggingCore?>(nil)
        let stops = Atomic<Int>(0)

        func started(_ context: DeliveryContext) { core.withLock { $0 = context.core } }

        func stop() {
            stops.add(1, ordering: .relaxed)
            guard let core = core.withLock({ $0 }) else { return }
            Logger(label: "delivery") { BlackboxLogHandler(label: $0, core: core) }.info("delivery stopping")
        }
    }

    @Test("delivery stops first, while logging still runs; then the core drains; start works again")
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
        Blackbox.shutdown()
        #expect(delivery.stops.load(ordering: .relaxed) == 1)
        let log = try String(contentsOfFile: "\(directory.path)/logs/order.log", encoding: .utf8)
        #expect(log.contains("delivery stopping"), "\(log)")

        try Blackbox.start(configuration, bootstrapLogging: false)
        Blackbox.shutdown()
    }

    /// Records what the runtime told it, in order.
    final class RecordingDelivery: DiagnosticsDelivery {
        let events = Mutex<[String]>([])
        func started(_ context: DeliveryContext) { events.withLock { $0.append("started") } }
        func stop() { events.withLock { $0.append("stop") } }
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
            // The start-up thread may still be on its way: give it time to (wrongly) start delivery.
            try await Task.sleep(for: .milliseconds(30))
            let events = delivery.events.withLock { $0 }
            #expect(events == ["stop"] || events == ["started", "stop"], "\(events)")
            orders.insert(events)
        }
        // Which orders occurred depends on scheduling; every one seen was a correct one.
        print("shutdown racing start-up: orders seen \(orders.sorted { $0.count < $1.count })")
    }

    @Test("shutdown is idempotent, and a stopped runtime is not the current one")
    func shutdownTwice() throws {
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
        #expect(delivery.events.withLock { $0.filter { $0 == "stop" }.count } == 2)
    }
}
