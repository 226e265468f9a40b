import Dispatch
import Testing

@testable import Blackbox

/// A log call's error at a site whose report is not due: the caller reads the site's gate and the
/// writer counts the call (issue 52's W5 bar: ~45 ns of decision per call off the caller's thread).
@Suite struct CaptureGatesTests {
    let type = ObjectIdentifier(Int.self)

    @Test("a gate closes on its decision until the report is due; a wall-clock step either way opens it")
    func gateOverTime() throws {
        let limiter = CallSiteLimiter()
        let gates = CaptureGates()
        let now: UInt64 = 1_800_000_000_000_000_000
        #expect(
            limiter.shouldReport(gatingIn: gates, file: "Shop/Pay.swift", line: 4, errorType: type, now: now)
                == (true, 0), "a site's first error is reported")
        let gate = try #require(gates.gate(file: "Shop/Pay.swift", line: 4)).takeUnretainedValue()
        let interval = Assertions.reportIntervalNanoseconds
        #expect(gate.isClosed(at: now) && gate.isClosed(at: now + interval / 2))
        #expect(!gate.isClosed(at: now - 1), "the clock stepped back: decided again")
        #expect(!gate.isClosed(at: now + interval + 1_000_000_000), "the clock stepped forward past the due time")
        // Calls the gate let through are the writer's to count; the budget's next report says so.
        gate.countSuppressed()
        gate.countSuppressed()
        #expect(gate.decide(at: now + 1) == (false, 3), "an early decision counts itself beside them")
        #expect(gate.isClosed(at: now + 2))
    }

    @Test("a gate is found by the call's strings and by the record's bytes; a type keeps four sites")
    func gatesPerSite() throws {
        let limiter = CallSiteLimiter()
        let gates = CaptureGates()
        for line in 1...6 {
            _ = limiter.shouldReport(gatingIn: gates, file: "Shop/Pay.swift", line: UInt(line), errorType: type, now: 5)
        }
        #expect(gates.isFull)
        for line in 1...4 { #expect(gates.gate(file: "Shop/Pay.swift", line: UInt(line)) != nil, "line \(line)") }
        #expect(gates.gate(file: "Shop/Pay.swift", line: 5) == nil, "a fifth site is decided in full")
        let file = Array("Shop/Pay.swift".utf8)
        file.withUnsafeBytes { bytes in
            #expect(
                gates.gate(file: bytes, line: 2)?.toOpaque() == gates.gate(file: "Shop/Pay.swift", line: 2)?.toOpaque())
            #expect(gates.gate(file: bytes, line: 9) == nil)
            #expect(
                gates.gate(file: UnsafeRawBufferPointer(rebasing: bytes[..<4]), line: 2) != nil, "a record's cut name")
        }
        #expect(gates.gate(file: "Shop/Cart.swift", line: 2) == nil)
    }

    @Test("threads making one site's gate at once share one gate and one budget")
    func gateRace() throws {
        let limiter = CallSiteLimiter()
        let gates = CaptureGates()
        let reports = SharedCount()
        DispatchQueue.concurrentPerform(iterations: 4) { _ in
            for _ in 0..<200
            where limiter.shouldReport(gatingIn: gates, file: "Shop/Pay.swift", line: 4, errorType: type, now: 5).due {
                reports.add(1)
            }
        }
        #expect(reports.value == 1)
        #expect(gates.gate(file: "Shop/Pay.swift", line: 5) == nil && !gates.isFull, "one gate for the site")
    }

    @Test("after the limiter starts over, a site's gate is not trusted")
    func gateOfAnEarlierGeneration() throws {
        let limiter = CallSiteLimiter()
        let gates = CaptureGates()
        _ = limiter.shouldReport(gatingIn: gates, file: "Shop/Pay.swift", line: 4, errorType: type, now: 5)
        let gate = try #require(gates.gate(file: "Shop/Pay.swift", line: 4)).takeUnretainedValue()
        #expect(gate.isClosed(at: 6))
        for line in 0..<CallSiteLimiter.maxSites { _ = limiter.shouldReport(CallSiteKey(file: "f", line: UInt(line))) }
        #expect(!gate.isClosed(at: 6))
    }
}
