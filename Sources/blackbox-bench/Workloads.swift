@_spi(Benchmarks) import Blackbox
import Dispatch
import Logging

#if canImport(Glibc)
    import Glibc
#endif

/// swift-log's cheapest possible backend: POD, does nothing. The frontend floor.
struct NoOpHandler: LogHandler {
    var logLevel: Logger.Level = .info
    var metadata: Logger.Metadata {
        get { [:] }
        set {}
    }
    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { nil }
        set {}
    }
    func log(event: LogEvent) {}
}

/// W4's no-op: what any handler that sees a call's metadata does before it formats anything: the
/// logger's metadata, the provider's and the call's merged (later sources win), then dropped.
struct MergingNoOpHandler: LogHandler {
    var logLevel: Logger.Level = .info
    var metadata: Logger.Metadata = [:]
    var metadataProvider: Logger.MetadataProvider?

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        var merged = metadata
        merged.merge(metadataProvider?.get() ?? [:]) { _, new in new }
        merged.merge(event.metadata ?? [:]) { _, new in new }
        blackHole(merged.count)
    }
}

/// Keeps the optimizer from dropping work whose result nothing reads.
@inline(never)
func blackHole(_ value: Int) {
    if value == -1 { print("") }
}

/// The same for an error the caller made and logs no more of.
@inline(never)
func blackHole(_ error: borrowing any Error) {}

/// W4's four values from a metadata provider, standing in for swift-otel's (trace and span ids, flags,
/// service): computed on every call, as a provider reading a task-local span does.
let tracingLikeProvider = Logger.MetadataProvider {
    [
        "trace_id": "4bf92f3577b34da6a3ce929d0e0e4736", "span_id": "00f067aa0ba902b7", "trace_flags": "01",
        "service.name": "bench",
    ]
}

/// What a workload calls: the same message through the competitor's front end.
struct Subject: Sendable {
    let fast: FastLogger?
    var logger: Logger
    let user = "alice"

    /// W1 and W2 call it at `.info` (enabled), W3 at `.debug` (below the level). `info()` and
    /// `log(level: .info)` are the same inlined path in both front ends.
    /// W4: the message with 8 metadata values (the logger's request id, three from the call, four
    /// from the provider), through swift-log.
    @inline(__always)
    func logWithMetadata(_ i: Int) {
        logger.info(
            "request id=\(i) user=\(user) took \(i % 1000) ms",
            metadata: ["order": "\(i)", "items": "3", "total": "42.50"])
    }

    /// W5: W1's message at `.error` with one metadata value, as `form` says: the value plain
    /// (`plain`), the call with an `error:` (`error`: captured, rate-limited per call site), the value
    /// marked sensitive (`private`), the call with an error that describes itself (`describedError`:
    /// Swift prints an enum without a `description` by reflection, several microseconds).
    @inline(__always)
    func logError(_ i: Int, form: ErrorCallForm) {
        switch form {
        case .plain:
            logger.error("request id=\(i) user=\(user) took \(i % 1000) ms", metadata: ["user": "\(user)"])
        case .error:
            logger.error(
                "request id=\(i) user=\(user) took \(i % 1000) ms", error: BenchError.declined(order: i),
                metadata: ["user": "\(user)"])
        case .describedError:
            logger.error(
                "request id=\(i) user=\(user) took \(i % 1000) ms", error: DescribedBenchError(order: i),
                metadata: ["user": "\(user)"])
        case .private:
            logger.error("request id=\(i) user=\(user) took \(i % 1000) ms", metadata: ["user": .sensitive(user)])
        case .plainHoldingError, .plainHoldingDescribedError:
            let error: any Error =
                form == .plainHoldingError ? BenchError.declined(order: i) : DescribedBenchError(order: i)
            logger.error("request id=\(i) user=\(user) took \(i % 1000) ms", metadata: ["user": "\(user)"])
            blackHole(error)
        }
    }

    @inline(__always)
    func log(_ level: LogLevel, _ i: Int) {
        if let fast {
            fast.log(level, "request id=\(i) user=\(user) took \(i % 1000) ms")
        } else {
            logger.log(level: level.loggerLevel, "request id=\(i) user=\(user) took \(i % 1000) ms")
        }
    }
}

enum ErrorCallForm: String {
    case plain, error
    case describedError = "describederror"
    case `private`
    /// The plain call, its caller holding an error made as the `error` (`describederror`) form makes
    /// it: what an app that caught an error pays to log without `error:` (W5P's control for them).
    case plainHoldingError, plainHoldingDescribedError

    /// The plain call that differs from this form only by the form's part (W5P).
    var control: ErrorCallForm {
        switch self {
        case .error: .plainHoldingError
        case .describedError: .plainHoldingDescribedError
        default: .plain
        }
    }
}

enum BenchError: Error {
    case declined(order: Int)
}

struct DescribedBenchError: Error, CustomStringConvertible {
    let order: Int
    var description: String { "declined order \(order)" }
}

/// Calls `call` `count` times: the mean of all calls, and the percentiles of every 100th call timed
/// on its own.
@inline(__always)
func measureCalls(_ count: Int, into fields: inout [String: String], _ call: (Int) -> Void) {
    var samples: [UInt64] = []
    samples.reserveCapacity(count / 100)
    let start = monotonicNow()
    for i in 0..<count {
        if i % 100 == 0 {
            let t0 = monotonicNow()
            call(i)
            samples.append(monotonicNow() &- t0)
        } else {
            call(i)
        }
    }
    let elapsed = monotonicNow() - start
    samples.sort()
    fields["mean_ns"] = "\(Double(elapsed) / Double(count))"
    fields["p50_ns"] = "\(percentile(samples, 0.5))"
    fields["p99_ns"] = "\(percentile(samples, 0.99))"
    fields["p999_ns"] = "\(percentile(samples, 0.999))"
}

@inline(__always)
func monotonicNow() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec)
}

/// The calling thread's CPU time, to the nanosecond (getrusage's is in microseconds).
func threadCPUNanoseconds() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)
    return UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec)
}

/// User and system CPU time of the process (finished threads included) or of the calling thread.
func cpuNanoseconds(ofThread: Bool = false) -> UInt64 {
    var usage = rusage()
    let rusageThread: __rusage_who_t = 1  // RUSAGE_THREAD (Linux): Glibc's module does not export it
    guard getrusage(ofThread ? rusageThread : RUSAGE_SELF.rawValue, &usage) == 0 else { return 0 }
    func nanoseconds(_ time: timeval) -> UInt64 { UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_usec) * 1000 }
    return nanoseconds(usage.ru_utime) + nanoseconds(usage.ru_stime)
}

/// A `/proc/self/status` figure in MB: `VmHWM` (peak resident), `RssAnon` (private memory now),
/// `RssFile` (mapped files now: shared libraries and the journal's mapping).
func statusMegabytes(_ field: String) -> Double? {
    guard let file = fopen("/proc/self/status", "r") else { return nil }
    defer { fclose(file) }
    var line = [CChar](repeating: 0, count: 256)
    while fgets(&line, 256, file) != nil {
        let text = String(decoding: line.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        if text.hasPrefix(field + ":") {
            return (text.split(whereSeparator: { $0 == " " || $0 == "\t" }).compactMap { Double($0) }.first ?? 0)
                / 1024
        }
    }
    return nil
}

func percentile(_ sorted: [UInt64], _ p: Double) -> UInt64 {
    guard !sorted.isEmpty else { return 0 }
    return sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]
}

/// Runs one workload and returns its JSON line.
func runBenchmark(workload: String, competitor: String, directory: String) -> String {
    var configuration = BlackboxConfiguration(appName: "bench", directory: directory)
    configuration.sinks = [.file]
    configuration.levels = LevelSettings(defaultLevel: .info)
    configuration.overflow = .block(timeoutMilliseconds: 60_000)  // like spdlog: never drop
    configuration.rotation.maxFileSize = 1 << 40
    configuration.rotation.interval = nil
    if let megabytes = getenv("BLACKBOX_BENCH_JOURNAL_MB").flatMap({ Int(String(cString: $0)) }) {
        configuration.journalSize = megabytes << 20  // for experiments: how much does journal size matter?
    }
    if getenv("BLACKBOX_BENCH_NO_SWEEP") != nil {
        configuration.crashReporting.alternateStackSweep = nil  // for experiments: what the sweep costs
    }
    if getenv("BLACKBOX_BENCH_NO_ERROR_CAPTURE") != nil {
        configuration.capturesLoggedErrors = false  // for experiments: W5's error line without its capture
    }
    if getenv("BLACKBOX_BENCH_NO_SINKS") != nil {
        configuration.sinks = []  // for experiments: the producer's cost without the writer's formatting
    }

    var competitor = competitor
    // `native+journald`, `swiftlog+journald`: the file and the systemd journal (bench/run.py
    // --journald runs them beside a journald of their own); the identifier names this run's entries.
    if competitor.hasSuffix("+journald") {
        competitor.removeLast("+journald".count)
        configuration.sinks = [.file, .journald]
        configuration.journald.identifier = "bench-" + (directory.split(separator: "/").last.map(String.init) ?? "")
    }
    // `native+hang`, `swiftlog+hang`: the same, with the hang watchdog guarding a queue and a
    // heartbeat (beaten off the measured threads) — what a healthy app pays for hang detection.
    let watchingHangs = competitor.hasSuffix("+hang")
    if watchingHangs { competitor.removeLast("+hang".count) }
    // W5's `swiftlog+error`, `swiftlog+describederror`, `swiftlog+private`: the same call with an error
    // (printed by reflection, or describing itself), with a private value.
    var errorCallForm = ErrorCallForm.plain
    for form in [ErrorCallForm.error, .describedError, .private] where competitor.hasSuffix("+\(form.rawValue)") {
        errorCallForm = form
        competitor.removeLast(form.rawValue.count + 1)
    }
    let metadataHeavy = workload == "W4"
    if metadataHeavy { configuration.metadataProvider = tracingLikeProvider }
    // W5Q holds a block's lines in the journal until the block ends (20,000 of ~200 bytes).
    if workload == "W5Q" { configuration.journalSize = max(configuration.journalSize, 64 << 20) }
    var subject: Subject
    var core: LoggingCore?
    switch competitor {
    case "noop" where metadataHeavy:
        subject = Subject(
            fast: nil,
            logger: Logger(label: "bench") { _ in MergingNoOpHandler(metadataProvider: tracingLikeProvider) })
    case "noop", "noop-bare":
        subject = Subject(fast: nil, logger: Logger(label: "bench") { _ in NoOpHandler() })
    case "native", "swiftlog":
        let started: LoggingCore
        do {
            started = try Blackbox.start(configuration, bootstrapLogging: false).core
        } catch {
            return "{\"error\": \"\(error)\"}"
        }
        core = started
        let logger = Logger(label: "bench") { BlackboxLogHandler(label: $0, core: started) }
        subject = Subject(
            fast: competitor == "native" ? FastLogger(label: "bench", core: started) : nil, logger: logger)
        if watchingHangs { watchForHangsWhileMeasuring() }
    default:
        return "{\"error\": \"unknown competitor \(competitor)\"}"
    }

    if metadataHeavy { subject.logger[metadataKey: "request-id"] = "8d7e1f2a-bench" }

    var fields: [String: String] = ["workload": "\"\(workload)\"", "competitor": "\"\(competitor)\""]
    switch workload {
    case "W1":
        inBenchScope { measureCalls(1_000_000, into: &fields) { subject.log(.info, $0) } }

    case "W4":
        measureCalls(1_000_000, into: &fields) { subject.logWithMetadata($0) }

    case "W5":
        // The caller's own CPU per call beside its latency: a call's latency here includes waiting
        // for the writer when the ring is full (`overflow: .block`); its CPU is what the call costs.
        // The steady state: the site's first error is reported before the measured calls, and its
        // report named (a thread's work for about a second, which overlapped the measured calls in
        // some runs and made them bimodal, ~100 ns a call apart); the calls after it until the report
        // interval ends are counted, as a busy site's are.
        if errorCallForm == .error || errorCallForm == .describedError {
            inBenchScope { subject.logError(-1, form: errorCallForm) }
            usleep(2_000_000)
        }
        let callerCPUAtStart = cpuNanoseconds(ofThread: true)
        inBenchScope { measureCalls(1_000_000, into: &fields) { subject.logError($0, form: errorCallForm) } }
        fields["caller_cpu_ns_per_line"] = "\(Double(cpuNanoseconds(ofThread: true) - callerCPUAtStart) / 1_000_000)"

    case "W5P", "W5Q":
        // W5's form against the plain call in one process: blocks of calls take turns (each kind
        // first, second and last in turn, so a steady drift cancels), each block's CPU read from the
        // thread's own clock. Runs of one binary differ by a tenth on this VM (frequency,
        // neighbours); blocks a few milliseconds apart share the machine's state, so their ratio is
        // what the form costs. A form with an error has a second control, the plain call whose
        // caller made the same error (`control_ratio`): an app logs an error it caught, and making
        // the error (its box's allocation and free) is the app's, with `error:` or without.
        // W5Q: the same with the writer held during each block and let drain between blocks: what
        // the calls cost their thread alone. On this VM a busy writer slows the thread beside it (a
        // flood of errors printed by reflection doubled the plain call's CPU), which W5P counts too.
        let quietWriter = workload == "W5Q"
        if errorCallForm == .error || errorCallForm == .describedError {
            inBenchScope { subject.logError(-1, form: errorCallForm) }
            usleep(2_000_000)
        }
        let blockCalls = 20_000
        let kinds =
            errorCallForm.control == .plain ? [.plain, errorCallForm] : [.plain, errorCallForm.control, errorCallForm]
        var blocks: [[UInt64]] = kinds.map { _ in [] }
        var next = 0
        func block(_ form: ErrorCallForm) -> UInt64 {
            if quietWriter { core?.holdWriter(true) }
            defer {
                if quietWriter {
                    core?.holdWriter(false)
                    core?.flush(timeout: .seconds(60))
                }
            }
            let start = threadCPUNanoseconds()
            inBenchScope {
                for _ in 0..<blockCalls {
                    subject.logError(next, form: form)
                    next += 1
                }
            }
            return threadCPUNanoseconds() - start
        }
        // W5Q's journal is touched whole once first: a block writing pages for the first time paid
        // their faults (pair ratios 0.74-1.60 without this).
        if quietWriter { for _ in 0..<20 { _ = block(.plain) } }
        for round in 0..<(kinds.count == 2 ? 50 : 36) {
            for step in kinds.indices {
                let kind = (round + (round % 2 == 0 ? step : kinds.count - 1 - step)) % kinds.count
                blocks[kind].append(block(kinds[kind]))
            }
        }
        let perCall = { (blocks: [UInt64]) in Double(blocks.reduce(0, +)) / Double(blocks.count * blockCalls) }
        let formBlocks = blocks[kinds.count - 1]
        fields["caller_cpu_ns_per_line"] = "\(perCall(formBlocks))"
        fields["plain_caller_cpu_ns_per_line"] = "\(perCall(blocks[0]))"
        fields["ratio"] = "\(perCall(formBlocks) / perCall(blocks[0]))"
        let ratios = zip(formBlocks, blocks[0]).map { Double($0) / Double($1) }.sorted()
        fields["pair_ratio_p10"] = "\(ratios[ratios.count / 10])"
        fields["pair_ratio_p50"] = "\(ratios[ratios.count / 2])"
        fields["pair_ratio_p90"] = "\(ratios[ratios.count * 9 / 10])"
        if kinds.count == 3 {
            fields["control_caller_cpu_ns_per_line"] = "\(perCall(blocks[1]))"
            fields["control_ratio"] = "\(perCall(formBlocks) / perCall(blocks[1]))"
            let controlRatios = zip(formBlocks, blocks[1]).map { Double($0) / Double($1) }.sorted()
            fields["control_pair_ratio_p10"] = "\(controlRatios[controlRatios.count / 10])"
            fields["control_pair_ratio_p90"] = "\(controlRatios[controlRatios.count * 9 / 10])"
        }

    case "W2":
        let threads = 4
        let perThread = 250_000
        let start = monotonicNow()
        final class Box: @unchecked Sendable {
            let subject: Subject
            let thread: Int
            /// The calling thread's own CPU time, read by the thread itself when its calls are done.
            var callerCPUNanoseconds: UInt64 = 0
            init(_ subject: Subject, _ thread: Int) {
                self.subject = subject
                self.thread = thread
            }
        }
        let cpuAtStart = cpuNanoseconds()
        let boxes = (0..<threads).map { Box(subject, $0) }
        var handles: [pthread_t] = []
        for t in 0..<threads {
            var thread = pthread_t()
            pthread_create(
                &thread, nil,
                { raw in
                    let box = Unmanaged<Box>.fromOpaque(raw!).takeRetainedValue()
                    inBenchScope {
                        for n in 0..<250_000 { box.subject.log(.info, box.thread * 1_000_000 + n) }
                    }
                    box.callerCPUNanoseconds = cpuNanoseconds(ofThread: true)
                    return nil
                }, Unmanaged.passRetained(boxes[t]).toOpaque())
            handles.append(thread)
        }
        for thread in handles { pthread_join(thread, nil) }
        Blackbox.shutdown()  // drains: every line written, the file closed
        let elapsed = monotonicNow() - start
        fields["msgs_per_s"] = "\(Double(threads * perThread) / (Double(elapsed) / 1e9))"
        // CPU per line, of the whole process and of the calling threads alone (the rest is the
        // writer's): steadier than msgs/s when five threads share two cores.
        let lines = Double(threads * perThread)
        fields["cpu_ns_per_line"] = "\(Double(cpuNanoseconds() - cpuAtStart) / lines)"
        fields["caller_cpu_ns_per_line"] = "\(Double(boxes.reduce(0) { $0 + $1.callerCPUNanoseconds }) / lines)"

    case "W3":
        let count = 10_000_000
        let start = monotonicNow()
        for i in 0..<count { subject.log(.debug, i) }
        let elapsed = monotonicNow() - start
        fields["mean_ns"] = "\(Double(elapsed) / Double(count))"

    default:
        return "{\"error\": \"unknown workload \(workload)\"}"
    }
    Blackbox.shutdown()
    // What the writer thread spent per line formatting and writing: W1, W2 and W4 log 1 M lines (W3's
    // calls are below the level and write nothing).
    if let cpu = core?.writerCPUNanoseconds, workload != "W3" {
        fields["writer_cpu_ns_per_line"] = "\(Double(cpu) / 1e6)"
    }
    fields["peak_rss_mb"] = statusMegabytes("VmHWM").map { "\($0)" } ?? "null"
    fields["rss_anon_mb"] = statusMegabytes("RssAnon").map { "\($0)" } ?? "null"
    fields["rss_file_mb"] = statusMegabytes("RssFile").map { "\($0)" } ?? "null"
    for key in ["mean_ns", "p50_ns", "p99_ns", "p999_ns", "msgs_per_s"] where fields[key] == nil {
        fields[key] = "null"
    }
    return "{" + fields.sorted { $0.key < $1.key }.map { "\"\($0.key)\": \($0.value)" }.joined(separator: ", ") + "}"
}

/// `BLACKBOX_BENCH_SCOPE=1`: the measured calls run inside a request scope (`Blackbox.withScope`), as a
/// server's handlers do with an integration's middleware; what the scope costs the logging calls.
func inBenchScope(_ body: () -> Void) {
    guard getenv("BLACKBOX_BENCH_SCOPE") != nil else { return body() }
    Blackbox.withScope(DiagnosticScope(route: "/bench/{id}", method: "GET", requestID: "bench-request")) { body() }
}

/// A watched queue and a heartbeat beaten every 100 ms by a thread of its own.
func watchForHangsWhileMeasuring() {
    Blackbox.watchForHangs(queue: DispatchQueue(label: "bench-watched"), name: "bench queue")
    let heartbeat = Blackbox.hangHeartbeat("bench loop")
    detachThread {
        while true {
            heartbeat.beat()
            usleep(100_000)
        }
    }
}

/// A plain pthread: the harness does not import Foundation (for `Thread`), whose libraries (ICU among
/// them) added ~8 MB to every competitor's resident size, which an app linking Blackbox does not pay.
func detachThread(_ body: @escaping @Sendable () -> Void) {
    final class Body: Sendable {
        let run: @Sendable () -> Void
        init(_ run: @escaping @Sendable () -> Void) { self.run = run }
    }
    var thread = pthread_t()
    pthread_create(
        &thread, nil,
        { raw in
            Unmanaged<Body>.fromOpaque(raw!).takeRetainedValue().run()
            return nil
        }, Unmanaged.passRetained(Body(body)).toOpaque())
    pthread_detach(thread)
}
