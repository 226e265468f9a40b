import Atomics
import BlackboxFormat
import BlackboxSystem
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// The requests the running process served (`Blackbox.handleRequest`), counted in a file of three
/// counters beside its run record (`runs/<pid>.requests`: started, ended, server errors) and mapped
/// shared, so that the counts outlive a crash or a `kill -9` (the page cache keeps them, as it keeps
/// the journal): the next start knows how many requests the run served, and how many were in flight
/// when it died. A request costs two atomic additions to the mapping; the file is made at the run's
/// first request (an app that serves none has none); with no run recorded (no `Blackbox.start`, an
/// unwritable directory) nothing is counted.
final class RequestTally: Sendable {
    /// The current run's counters: process-wide, as the request-handling entry point is.
    static let shared = RequestTally()

    /// The mapping's address (0: none).
    private let counters = Atomic<UInt>(0)
    /// The run whose first request makes the file, until it does.
    private let pending = Mutex<(pid: Int32, directory: DiagnosticsDirectory)?>(nil)
    private let awaitingFirstRequest = Atomic<Bool>(false)
    private static let size = 3 * MemoryLayout<UInt64>.size

    private enum Counter: Int {
        case started, ended, serverErrors
    }

    static func path(pid: Int32, in directory: DiagnosticsDirectory) -> String {
        "\(directory.runs)/\(pid).requests"
    }

    /// Counts from now on, into a file for `pid` made at its first request (the run's record is
    /// already written).
    func begin(pid: Int32, in directory: DiagnosticsDirectory) {
        pending.withLock { $0 = (pid, directory) }
        counters.store(0, ordering: .releasing)
        awaitingFirstRequest.store(true, ordering: .releasing)
    }

    /// Stops counting (the run ended); the file stays until its run is counted. A mapping stays in
    /// place (24 bytes): a request still counting into it must not touch unmapped memory.
    func end() {
        awaitingFirstRequest.store(false, ordering: .releasing)
        pending.withLock { $0 = nil }
        counters.store(0, ordering: .releasing)
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
        let word = base.advanced(by: counter.rawValue * MemoryLayout<UInt64>.size)
        UnsafeAtomic<UInt64>(at: word.assumingMemoryBound(to: UInt64.AtomicRepresentation.self))
            .wrappingIncrement(ordering: .relaxed)
    }

    /// What a run counted, as its end tells it: every request it started, those that failed, and
    /// those still in flight when it ended uncleanly (`cutShort`); nil when it counted none. Reads
    /// the file with read(2): the mapping of a dead process is its page cache.
    static func counts(pid: Int32, in directory: DiagnosticsDirectory, cutShort: Bool) -> RequestCounts? {
        let fd = open(path(pid: pid, in: directory), O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var words = [UInt64](repeating: 0, count: 3)
        let read = words.withUnsafeMutableBytes { buffer in
            retryingEINTR { pread(fd, buffer.baseAddress, size, 0) }
        }
        guard read == size else { return nil }
        // From a file: bounded before any arithmetic (a counter cannot pass 2^40 in a run's lifetime).
        let (started, ended, errors) = (
            Int(min(words[0], 1 << 40)), Int(min(words[1], 1 << 40)), Int(min(words[2], 1 << 40))
        )
        guard started > 0 else { return nil }
        let inFlight = max(0, started - ended)
        return RequestCounts(
            total: started, serverErrors: min(errors, started), crashed: cutShort ? inFlight : 0)
    }

    static func remove(pid: Int32, in directory: DiagnosticsDirectory) {
        unlink(path(pid: pid, in: directory))
    }
}
