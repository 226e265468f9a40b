import Atomics
import BlackboxFormat
import BlackboxSystem
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// The requests the running process served (`Blackbox.handleRequest`), counted in a file of five
/// counters beside its run record (`runs/<pid>.requests`: started, ended, server errors, and the
/// ended requests and server errors already sent while it ran) and mapped shared, so that the counts
/// outlive a crash or a `kill -9` (the page cache keeps them, as it keeps the journal): the next start
/// knows how many requests the run served that were not sent yet, and how many were in flight when it
/// died. A request costs two atomic additions to the mapping; the file is made at the run's first
/// request (an app that serves none has none); with no run recorded (no `Blackbox.start`, an
/// unwritable directory) nothing is counted.
///
/// A server runs for weeks: its uploader sends what ended so far (`unreported`, then `markReported`
/// once the bundle holding it is durable), so a release's request health, and its regression alert,
/// come while it runs rather than at its next start.
package final class RequestTally: Sendable {
    /// The current run's counters: process-wide, as the request-handling entry point is.
    package static let shared = RequestTally()

    /// The mapping's address (0: none).
    private let counters = Atomic<UInt>(0)
    /// The run whose first request makes the file, until it does.
    private let pending = Mutex<(pid: Int32, directory: DiagnosticsDirectory)?>(nil)
    private let awaitingFirstRequest = Atomic<Bool>(false)
    /// The run's diagnostics directory, and when its counts were last taken for sending (wall-clock
    /// nanoseconds, for the summary; monotonic ones, for the interval).
    private let reporting = Mutex<(directory: String, since: UInt64, sinceMonotonic: UInt64)?>(nil)
    private static let size = 5 * MemoryLayout<UInt64>.size
    /// A file written before the sent counters were kept.
    private static let olderSize = 3 * MemoryLayout<UInt64>.size

    private enum Counter: Int {
        case started, ended, serverErrors, reportedEnded, reportedErrors
    }

    static func path(pid: Int32, in directory: DiagnosticsDirectory) -> String {
        "\(directory.runs)/\(pid).requests"
    }

    /// Counts from now on, into a file for `pid` made at its first request (the run's record is
    /// already written).
    func begin(pid: Int32, in directory: DiagnosticsDirectory) {
        pending.withLock { $0 = (pid, directory) }
        reporting.withLock { $0 = (directory.root, wallClockNanoseconds(), monotonicNanoseconds()) }
        counters.store(0, ordering: .releasing)
        awaitingFirstRequest.store(true, ordering: .releasing)
    }

    /// Stops counting (the run ended); the file stays until its run is counted. A mapping stays in
    /// place (24 bytes): a request still counting into it must not touch unmapped memory.
    func end() {
        awaitingFirstRequest.store(false, ordering: .releasing)
        pending.withLock { $0 = nil }
        reporting.withLock { $0 = nil }
        counters.store(0, ordering: .releasing)
    }

    /// What the running process counted since its counts were last sent: the requests that ended
    /// (failed ones among them) from `since` to now, and the mark `markReported` records once they are
    /// durable in a bundle. Nil when nothing ended since, when the run of `directory` counts nothing,
    /// or when the last counts were taken less than `interval` ago.
    package func unreported(in directory: String, every interval: Duration) -> Unreported? {
        guard let base = UnsafeMutableRawPointer(bitPattern: counters.load(ordering: .acquiring)),
            let last = reporting.withLock({ $0?.directory == directory ? $0 : nil }),
            monotonicNanoseconds() &- last.sinceMonotonic >= Self.nanoseconds(interval)
        else { return nil }
        // Errors before ended: a request counts its end before its error, so every error read here
        // belongs to a request the ended count read after it includes.
        let errors = load(.serverErrors, at: base)
        let ended = load(.ended, at: base)
        let (sentEnded, sentErrors) = (load(.reportedEnded, at: base), load(.reportedErrors, at: base))
        guard ended > sentEnded else { return nil }
        return Unreported(
            counts: RequestCounts(
                total: Int(min(ended - sentEnded, 1 << 40)), serverErrors: Int(min(errors &- sentErrors, 1 << 40))),
            sinceNanoseconds: last.since, ended: ended, errors: errors)
    }

    private static func nanoseconds(_ duration: Duration) -> UInt64 {
        let (seconds, attoseconds) = duration.components
        return UInt64(max(0, seconds)) &* 1_000_000_000 &+ UInt64(max(0, attoseconds / 1_000_000_000))
    }

    package struct Unreported: Sendable, Equatable {
        package var counts: RequestCounts
        /// When the counts began: the run's start, or when the last part was taken (wall clock, ns).
        package var sinceNanoseconds: UInt64
        fileprivate var ended: UInt64
        fileprivate var errors: UInt64
    }

    /// Records `sent` as sent: the run's end, or the next `unreported`, counts only what came after.
    package func markReported(_ sent: Unreported) {
        let address = counters.load(ordering: .acquiring)
        guard let base = UnsafeMutableRawPointer(bitPattern: address) else { return }
        store(sent.ended, into: .reportedEnded, at: base)
        store(sent.errors, into: .reportedErrors, at: base)
        reporting.withLock { reporting in
            guard let directory = reporting?.directory else { return }
            reporting = (directory, wallClockNanoseconds(), monotonicNanoseconds())
        }
    }

    private func word(_ counter: Counter, at base: UnsafeMutableRawPointer) -> UnsafeAtomic<UInt64> {
        UnsafeAtomic<UInt64>(
            at: base.advanced(by: counter.rawValue * MemoryLayout<UInt64>.size)
                .assumingMemoryBound(to: UInt64.AtomicRepresentation.self))
    }

    private func load(_ counter: Counter, at base: UnsafeMutableRawPointer) -> UInt64 {
        word(counter, at: base).load(ordering: .relaxed)
    }

    private func store(_ value: UInt64, into counter: Counter, at base: UnsafeMutableRawPointer) {
        word(counter, at: base).store(value, ordering: .relaxed)
    }

    /// The mapping, made by the first request that finds none (once: a failure is said and not tried again).
    private func mapForFirstRequest() -> UInt {
        pending.withLock { pending -> UInt in
            let current = counters.load(ordering: .acquiring)
            guard current == 0, let (pid, directory) = pending else { return current }
            pending = nil
            awaitingFirstRequest.store(false, ordering: .releasing)
            let path = Self.path(pid: pid, in: directory)
            let fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
            guard fd >= 0 else {
                InternalDiagnostics.report(
                    "cannot count requests in \(path): \(errnoDescription())", key: "request-tally")
                return 0
            }
            defer { close(fd) }
            guard ftruncate(fd, off_t(Self.size)) == 0,
                let mapped = mmap(nil, Self.size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0), mapped != MAP_FAILED
            else {
                InternalDiagnostics.report("cannot map \(path): \(errnoDescription())", key: "request-tally")
                return 0
            }
            counters.store(UInt(bitPattern: mapped), ordering: .releasing)
            return UInt(bitPattern: mapped)
        }
    }

    func requestStarted() { add(to: .started) }

    func requestEnded(serverError: Bool) {
        add(to: .ended)
        if serverError { add(to: .serverErrors) }
    }

    private func add(to counter: Counter) {
        var address = counters.load(ordering: .acquiring)
        if address == 0 {
            guard awaitingFirstRequest.load(ordering: .acquiring) else { return }
            address = mapForFirstRequest()
        }
        guard let base = UnsafeMutableRawPointer(bitPattern: address) else { return }
        word(counter, at: base).wrappingIncrement(ordering: .relaxed)
    }

    /// What a run counted, as its end tells it: every request it started that was not sent while it
    /// ran, those that failed, and those still in flight when it ended uncleanly (`cutShort`); nil
    /// when that is none. Reads the file with read(2): the mapping of a dead process is its page cache.
    static func counts(pid: Int32, in directory: DiagnosticsDirectory, cutShort: Bool) -> RequestCounts? {
        let fd = open(path(pid: pid, in: directory), O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var words = [UInt64](repeating: 0, count: 5)
        let read = words.withUnsafeMutableBytes { buffer in
            retryingEINTR { pread(fd, buffer.baseAddress, size, 0) }
        }
        guard read == size || read == olderSize else { return nil }
        // From a file: bounded before any arithmetic (a counter cannot pass 2^40 in a run's lifetime).
        let bounded = words.map { Int(min($0, 1 << 40)) }
        let (started, ended, errors) = (bounded[0], bounded[1], bounded[2])
        let (sentEnded, sentErrors) = (min(bounded[3], ended), min(bounded[4], errors))
        let total = started - sentEnded
        guard total > 0 else { return nil }
        let inFlight = max(0, started - ended)
        return RequestCounts(
            total: total, serverErrors: min(errors - sentErrors, total), crashed: cutShort ? inFlight : 0)
    }

    static func remove(pid: Int32, in directory: DiagnosticsDirectory) {
        unlink(path(pid: pid, in: directory))
    }
}
