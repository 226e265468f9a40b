import Dispatch
import Foundation
import Testing

@testable import Blackbox

/// The rate limit of reports per call site: a site's budget decided without a lock, and a thread's
/// recent sites found without building a key (issue 52).
@Suite struct CallSiteLimiterTests {
    let interval: UInt64 = 60_000_000_000

    @Test("a budget reports once per interval and counts the calls in between")
    func budgetOverTime() {
        let budget = CallSiteLimiter.Budget()
        #expect(budget.decide(now: 1_000, interval: interval) == (true, 0))
        #expect(budget.decide(now: 2_000, interval: interval) == (false, 1))
        #expect(budget.decide(now: 1_000 + interval - 1, interval: interval) == (false, 2))
        #expect(budget.decide(now: 1_000 + interval, interval: interval) == (true, 2), "due again, with the count")
        #expect(budget.decide(now: 1_000 + interval, interval: interval) == (false, 1))
        let unlimited = CallSiteLimiter.Budget()
        #expect(unlimited.decide(now: 5, interval: 0) == (true, 0), "no interval: every call reports")
        #expect(unlimited.decide(now: 5, interval: 0) == (true, 0))
    }

    @Test("threads racing for a due budget: one report, every other call counted")
    func budgetUnderContention() {
        let budget = CallSiteLimiter.Budget()
        let reports = SharedCount()
        let threads = 4
        let calls = 20_000
        DispatchQueue.concurrentPerform(iterations: threads) { _ in
            for _ in 0..<calls where budget.decide(now: 7, interval: interval).due { reports.add(1) }
        }
        #expect(reports.value == 1)
        #expect(budget.decide(now: 7 + interval, interval: interval) == (true, threads * calls - 1))
    }

    @Test("a log call's site is one budget whether its strings are literals or built at run time")
    func recentSitesShareTheTablesBudget() {
        let limiter = CallSiteLimiter()
        let type = ObjectIdentifier(Int.self)
        func report(_ file: String, line: UInt = 4, site: ThrowSite? = nil) -> (due: Bool, suppressed: Int) {
            limiter.shouldReport(file: file, line: line, throwSite: site, errorType: type)
        }
        #expect(report("Shop/Pay.swift") == (true, 0))
        #expect(report("Shop/Pay.swift") == (false, 1), "found in this thread's recent sites")
        // The same text in a new string each call: never this thread's identity, always the same key.
        let built = { ["Shop", "Pay.swift"].joined(separator: "/") }
        #expect(report(built()) == (false, 2))
        #expect(report(built()) == (false, 3))
        #expect(
            limiter.shouldReport(CallSiteKey(file: "Shop/Pay.swift", line: 4, errorType: type)) == (false, 4),
            "the key the table holds is the one the recent sites counted for")
        #expect(report("Shop/Pay.swift", line: 5) == (true, 0), "another line")
        let thrown = ThrowSite(fileID: "Shop/Cart.swift", line: 9, function: "add()")
        #expect(report("Shop/Pay.swift", site: thrown) == (true, 0), "another throw site")
        #expect(report("Shop/Pay.swift", site: thrown) == (false, 1))
        let elsewhere = ThrowSite(fileID: "Shop/Cart.swift", line: 9, function: "remove()")
        #expect(report("Shop/Pay.swift", site: elsewhere) == (true, 0), "the throw site's function counts")
        #expect(
            limiter.shouldReport(
                file: "Shop/Pay.swift", line: 4, throwSite: nil, errorType: ObjectIdentifier(UInt.self))
                == (true, 0), "another error type")

        // More sites than a thread remembers: the ones it forgot are found in the table again.
        for line in UInt(100)..<UInt(120) { #expect(report("Shop/Pay.swift", line: line) == (true, 0)) }
        #expect(report("Shop/Pay.swift") == (false, 5))
    }

    @Test("when the table starts over, a thread's recent sites forget its budgets")
    func recentSitesFollowTheTable() {
        let limiter = CallSiteLimiter()
        let type = ObjectIdentifier(Int.self)
        #expect(limiter.shouldReport(file: "A.swift", line: 1, throwSite: nil, errorType: type) == (true, 0))
        #expect(limiter.shouldReport(file: "A.swift", line: 1, throwSite: nil, errorType: type) == (false, 1))
        let before = limiter.generation.load(ordering: .relaxed)
        for line in 0..<CallSiteLimiter.maxSites {
            _ = limiter.shouldReport(CallSiteKey(file: "B.swift", line: UInt(line), route: "/r/\(line)"))
        }
        #expect(limiter.generation.load(ordering: .relaxed) != before)
        #expect(
            limiter.shouldReport(file: "A.swift", line: 1, throwSite: nil, errorType: type) == (true, 0),
            "a new budget, as the table's")
    }

    @Test("threads share a site's budget through their own recent sites")
    func recentSitesAcrossThreads() {
        let limiter = CallSiteLimiter()
        let reports = SharedCount()
        let type = ObjectIdentifier(Int.self)
        DispatchQueue.concurrentPerform(iterations: 4) { _ in
            for _ in 0..<5_000
            where limiter.shouldReport(file: "A.swift", line: 1, throwSite: nil, errorType: type).due {
                reports.add(1)
            }
        }
        #expect(reports.value == 1)
        #expect(limiter.shouldReport(CallSiteKey(file: "A.swift", line: 1, errorType: type)) == (false, 20_000))
    }
}
