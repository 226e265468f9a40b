import BlackboxTestSupport
import Foundation
import Logging
import Synchronization
import Testing

@testable import Blackbox

@Suite("Blackbox.shutdown", .serialized)
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
}
