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

    /// The lines, the error type, the source texts' lengths and the route: the source texts themselves
    /// are left to `==`, which finds a call site's `#fileID` and `#function` equal at once (the same
    /// literal every time). Hashing them was most of what a rate-limited capture cost the caller
    /// (issue 52). They come from the program, never from a client; the route may (an unmatched
    /// route is the client's path), so it is hashed whole, and a flood of paths cannot pile up in
    /// one bucket.
    func hash(into hasher: inout Hasher) {
        hasher.combine(line)
        hasher.combine(file.utf8.count)
        hasher.combine(errorType)
        hasher.combine(throwSite?.line)
        hasher.combine(throwSite?.fileID.utf8.count)
        hasher.combine(throwSite?.function.utf8.count)
        hasher.combine(route)
    }
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
        let now = coarseMonotonicNanoseconds()
        let interval = Assertions.reportIntervalNanoseconds
        return sites.withLock { sites in
            // One hash per call: the site is found once and changed in place.
            guard let index = sites.index(forKey: key) else {
                if sites.count >= Self.maxSites { sites.removeAll(keepingCapacity: true) }
                sites[key] = Site(lastReport: now, suppressed: 0)
                return (true, 0)
            }
            let suppressed = sites.values[index].suppressed
            if now &- sites.values[index].lastReport >= interval {
                sites.values[index] = Site(lastReport: now, suppressed: 0)
                return (true, suppressed)
            }
            sites.values[index].suppressed = suppressed + 1
            return (false, suppressed + 1)
        }
    }
}
