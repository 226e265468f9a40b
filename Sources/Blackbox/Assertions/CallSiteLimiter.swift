import Synchronization

/// What the limiter counts as one call site: a file and line, and for a captured error the site it
/// was thrown at (or the request's route) and its type. Hashed as a value: a key made as text
/// printed the error's type and site on every call, most of what a rate-limited capture cost.
struct CallSiteKey: Hashable, Sendable {
    var file: String
    var line: UInt
    var throwSite: ThrowSite? = nil
    var route: String? = nil
    var errorType: ObjectIdentifier? = nil
}

/// At most one report per call site per interval; counts the failures in between.
final class CallSiteLimiter: Sendable {
    static let shared = CallSiteLimiter()
    /// A key may hold a request's route, which for an unmatched route is the client's path: the table
    /// starts over when full rather than grow with them (a few extra reports, never unbounded memory).
    static let maxSites = 4096
    private struct Site {
        var lastReport: UInt64
        var suppressed: Int
    }
    private let sites = Mutex<[CallSiteKey: Site]>([:])

    /// (report now?, failures suppressed since the last report)
    func shouldReport(_ key: CallSiteKey) -> (Bool, Int) {
        let now = monotonicNanoseconds()
        let interval = Assertions.reportIntervalNanoseconds
        return sites.withLock { sites in
            guard var site = sites[key] else {
                if sites.count >= Self.maxSites { sites.removeAll(keepingCapacity: true) }
                sites[key] = Site(lastReport: now, suppressed: 0)
                return (true, 0)
            }
            if now &- site.lastReport >= interval {
                let suppressed = site.suppressed
                site = Site(lastReport: now, suppressed: 0)
                sites[key] = site
                return (true, suppressed)
            }
            site.suppressed += 1
            sites[key] = site
            return (false, site.suppressed)
        }
    }
}
