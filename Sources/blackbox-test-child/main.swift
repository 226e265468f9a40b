import Blackbox
import BlackboxErrors
import BlackboxFormat
import Logging

#if canImport(Glibc)
    import Glibc
#endif

// Helper processes for the tests (never shipped). Usage: blackbox-test-child <mode> <directory> [args]
//
//   kill-target DIR THREADS   log forever from THREADS threads (both APIs); after each call returns,
//                             record its sequence number in DIR/progress (a shared mapping), so the
//                             test knows which calls returned before it sent SIGKILL
//   recover DIR               start on DIR (replaying the journal), shut down, print the report
//   hold DIR                  start on DIR, print "ready", sleep until killed
//   try-start DIR             start on DIR with maxInstances 1; exit 3 with the error on stderr when the
//                             journal is locked
//   file-limit DIR            log under RLIMIT_FSIZE, then lift the limit and log again
//   disk-full DIR             fill DIR's file system, log, free the space, log again (DIR on a small tmpfs)
//   idle DIR                  log a little, then report the CPU time used over one idle second
//   levels DIR                log at several levels (run with BLACKBOX_LOG_LEVEL set)
//   console DIR COLOR         log to the console sink only (COLOR: auto, always, never)
//   all-outputs DIR           log to the file, the console and stdout at once, across a rotation
//   default-outputs DIR       log with the default outputs; print the outputs the run record names
//   journald DIR IDENT SIZE   Blackbox.start with the default outputs (BLACKBOX_CONSOLE or
//                             JOURNAL_STREAM choose journald) and IDENT as the journal identifier; log
//                             one record of each level, metadata keys journald must rename, a
//                             sensitive value, a message with newlines, one of SIZE bytes and the native
//                             API's; print the outputs the run record names
//   exit-drain DIR            log 1000 lines and return from main without flushing
//   fork DIR                  fork; the child logs (must reach stderr, not the parent's journal)
//   present-error DIR         present a recoverable error on stdin/stdout; print the outcome
//   process-crashes DIR       turn DIR's pending raw crash reports into outbox reports; print them
//   default-dir APP           print the default diagnostics directory for APP (run with HOME unset)
//   own-core-ensure DIR       build a LoggingCore without Blackbox.start, fail an ensure at level
//                             warning (traps off)
//   hangs-per-runtime DIR     start on DIR/a, let a heartbeat miss its deadline, shut down; start on
//                             DIR/b, the same; print each hang report's path and the watchdog
//                             threads alive after each shutdown
//   capture-errors DIR        own core; in a scope, capture a DiagnosticError three times at one call
//                             site (one report), then another error type at the same site
//   logged-errors DIR [off|scoped]
//                             own core (`off`: capturesLoggedErrors false); swift-log calls with an
//                             `error:`: three at .error from one line (`scoped`: all but the first
//                             in a request's scope), one at .critical, one at .warning, one at
//                             .error without an error
//   throw-sites DIR           own core; four requests through Blackbox.handleRequest whose handlers
//                             throw: a DiagnosticError, an error marked with Blackbox.thrown (from
//                             two routes), one logged with swift-log's error: and rethrown, one with
//                             no site; prints each site's line as "site NAME LINE"
//   first-capture-cost DIR [started]
//                             own core (or, with `started`, Blackbox.start and 300 ms for its start-up
//                             work, as a server answers its first request); capture an error at a site
//                             for the first time in the process; print the call's wall and thread CPU
//                             seconds, wait (60 s at most) for the report to be named, then shut
//                             down and print how long that took

func fail(_ message: String, code: Int32 = 2) -> Never {
    let text = "blackbox-test-child: \(message)\n"
    _ = text.utf8.withContiguousStorageIfAvailable { write(2, $0.baseAddress, $0.count) }
    exit(code)
}

func say(_ text: String) {
    let line = text + "\n"
    _ = line.utf8.withContiguousStorageIfAvailable { write(1, $0.baseAddress, $0.count) }
}

let arguments = CommandLine.arguments
guard arguments.count >= 3 else { fail("usage: blackbox-test-child MODE DIR [ARGS]") }
let mode = arguments[1]
let directory = arguments[2]

func configuration(journalSize: Int = 1 << 20) -> BlackboxConfiguration {
    var configuration = BlackboxConfiguration(appName: "child", directory: directory)
    // The tests count every line: aging must not delete any.
    configuration.retention.maxArchives = nil
    configuration.retention.maxTotalBytes = nil
    configuration.sinks = [.file]
    configuration.journalSize = journalSize
    configuration.levels = LevelSettings(defaultLevel: .trace)
    return configuration
}

func start(_ configuration: BlackboxConfiguration) -> LoggingCore {
    do {
        return try Blackbox.start(configuration).core
    } catch {
        if error.kind == .journalLocked { fail("\(error)", code: 3) }
        fail("\(error)")
    }
}

switch mode {
case "default-dir":
    say(BlackboxConfiguration.defaultDirectory(appName: directory))

case "kill-target":
    let threads = Int(arguments.count > 3 ? arguments[3] : "4") ?? 4
    let core = start(configuration(journalSize: 256 << 10))

    // One UInt64 per thread: the last sequence number whose log call returned.
    let progressPath = "\(directory)/progress"
    let fd = open(progressPath, O_RDWR | O_CREAT | O_TRUNC, 0o600)
    guard fd >= 0, ftruncate(fd, off_t(threads * 8)) == 0,
        let mapped = mmap(nil, threads * 8, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0), mapped != MAP_FAILED
    else { fail("cannot map \(progressPath)") }
    let progress = UnsafeMutablePointer<UInt64>(OpaquePointer(mapped))
    for t in 0..<threads { progress[t] = UInt64.max }  // max = nothing returned yet
    let ready = UnsafeMutablePointer<Int>.allocate(capacity: 1)
    ready.initialize(to: 0)
    let workers = (0..<threads).map { t in
        let slot = UInt(bitPattern: progress + t)
        return Thread {
            let slot = UnsafeMutablePointer<UInt64>(bitPattern: slot)!
            let swiftLog = Logger(label: "child.swiftlog")
            let fast = FastLogger(label: "child.fast", core: core)
            var n: UInt64 = 0
            while true {
                // Alternate the two front ends; the same payload either way.
                if n % 2 == 0 {
                    swiftLog.info("kill-test t=\(t) n=\(n) payload=abcdefghijklmnopqrstuvwxyz")
                } else {
                    fast.info("kill-test t=\(t) n=\(n) payload=abcdefghijklmnopqrstuvwxyz")
                }
                slot.pointee = n
                n += 1
            }
        }
    }
    for worker in workers { worker.start() }
    say("ready")
    while true { sleep(60) }

case "recover":
    let core = start(configuration(journalSize: 256 << 10))
    say("recovered=\(core.recovery.records) skipped=\(core.recovery.skippedBytes)")
    Blackbox.shutdown()

case "hold":
    _ = start(configuration())
    Logger(label: "holder").info("holding the journal")
    Blackbox.flush()
    say("ready")
    while true { sleep(60) }

case "try-start":
    // One instance only: a second process is refused.
    var config = configuration()
    config.maxInstances = 1
    _ = start(config)
    Logger(label: "intruder").info("should never get here")
    Blackbox.shutdown()

case "file-limit":
    var config = configuration(journalSize: 64 << 10)
    config.overflow = .drop
    config.rotation.maxFileSize = 1 << 30
    _ = start(config)
    let logger = Logger(label: "limited")
    var limit = rlimit(rlim_cur: 32 << 10, rlim_max: rlim_t.max)
    guard setrlimit(__rlimit_resource_t(RLIMIT_FSIZE.rawValue), &limit) == 0 else { fail("setrlimit: \(errno)") }
    for i in 0..<5000 { logger.info("before-lift i=\(i) padding=0123456789012345678901234567890123456789") }
    Blackbox.flush()
    say("logged-under-limit")
    limit.rlim_cur = rlim_t.max
    guard setrlimit(__rlimit_resource_t(RLIMIT_FSIZE.rawValue), &limit) == 0 else { fail("setrlimit: \(errno)") }
    for i in 0..<100 { logger.info("after-lift i=\(i)") }
    Blackbox.flush()
    Blackbox.shutdown()
    say("done")

case "disk-full":
    var config = configuration(journalSize: 64 << 10)
    config.overflow = .drop
    _ = start(config)
    let logger = Logger(label: "full")
    logger.info("before the disk fills")
    Blackbox.flush()
    let fillerPath = "\(directory)/filler"
    let filler = open(fillerPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
    guard filler >= 0 else { fail("cannot create \(fillerPath)") }
    let block = [UInt8](repeating: 0x46, count: 4096)
    while block.withUnsafeBytes({ write(filler, $0.baseAddress, $0.count) }) > 0 {}
    guard errno == ENOSPC else { fail("filling stopped with errno \(errno), not ENOSPC") }
    close(filler)
    for i in 0..<3000 { logger.info("while-full i=\(i) padding=0123456789012345678901234567890123456789") }
    Blackbox.flush()
    say("logged-while-full")
    unlink(fillerPath)
    for i in 0..<100 { logger.info("after-free i=\(i)") }
    Blackbox.flush()
    Blackbox.shutdown()
    say("done")

case "idle":
    _ = start(configuration())
    let logger = Logger(label: "idle")
    for i in 0..<100 { logger.info("busy for a moment \(i)") }
    Blackbox.flush()
    usleep(100_000)  // let the writer finish its short pauses and really sleep
    func cpuMicroseconds() -> Int {
        var usage = rusage()
        getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
        return (usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) * 1_000_000
            + Int(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec)
    }
    let before = cpuMicroseconds()
    sleep(1)
    say("idle-cpu-us=\(cpuMicroseconds() - before)")
    Blackbox.shutdown()

case "levels":
    var config = configuration()
    config.levels = LevelSettings(defaultLevel: .info)
    _ = start(config)
    Logger(label: "app").info("app info")
    Logger(label: "app").warning("app warning")
    Logger(label: "net.http").debug("net debug")
    Logger(label: "net.http").trace("net trace")
    Blackbox.shutdown()

case "console":
    var config = configuration()
    config.sinks = [.console]
    switch arguments.count > 3 ? arguments[3] : "auto" {
    case "always": config.console.color = .always
    case "never": config.console.color = .never
    default: config.console.color = .auto
    }
    _ = start(config)
    Logger(label: "console").error("to the console", metadata: ["k": "v"])
    Blackbox.shutdown()

case "all-outputs":
    var config = configuration()
    config.sinks = [.file, .console, .standardOutput]
    config.console.color = .never
    config.rotation.maxFileSize = 4096
    _ = start(config)
    let logger = Logger(label: "outputs")
    for index in 0..<200 { logger.info("line \(index)", metadata: ["k": "v"]) }
    Blackbox.shutdown()

case "default-outputs":
    // Whatever an app gets when it sets no outputs (the test runs it without a terminal).
    var config = BlackboxConfiguration(appName: "child", directory: directory)
    config.levels = LevelSettings(defaultLevel: .trace)
    _ = start(config)
    Logger(label: "defaults").info("default outputs line")
    for (_, run) in RunRecord.all(in: DiagnosticsDirectory(directory)) where run.pid == getpid() {
        say("outputs: \((run.outputs ?? []).joined(separator: ", "))")
    }
    Blackbox.shutdown()

case "journald":
    guard arguments.count >= 5, let size = Int(arguments[4]) else { fail("usage: journald DIR IDENT SIZE") }
    var config = BlackboxConfiguration(appName: "child", directory: directory)
    config.levels = LevelSettings(defaultLevel: .trace)
    config.journald.identifier = arguments[3]
    config.journalSize = 4 << 20
    let journalCore = start(config)
    let logger = Logger(label: "journal.test")
    logger.info(
        "plain line",
        metadata: [
            "request-id": "r-1", "trace_id": "4bf92f3577b34da6a3ce929d0e0e4736", "span_id": "00f067aa0ba902b7",
            "http.method": "GET", "_underscored": "u", "message": "not the message", "9lives": "cat",
            "token": .sensitive("s3cret"),
        ])
    logger.trace("trace line")
    logger.debug("debug line")
    logger.notice("notice line")
    logger.warning("first line\nsecond line\n\tindented third")
    logger.error("error line")
    logger.critical("critical line")
    logger.info("\(String(repeating: "0123456789abcdef", count: size / 16))", metadata: ["big": "yes"])
    FastLogger(label: "journal.fast", core: journalCore).info("fast \(42) \(true)")
    func loggedInAFunction(_ fast: FastLogger) {
        Logger(label: "journal.test").info("line in a function")
        fast.info("fast line in a function")
    }
    loggedInAFunction(FastLogger(label: "journal.fast", core: journalCore))
    for (_, run) in RunRecord.all(in: DiagnosticsDirectory(directory)) where run.pid == getpid() {
        say("outputs: \((run.outputs ?? []).joined(separator: ", "))")
    }
    Blackbox.shutdown()

case "service-stall", "service-healthy", "service-failure":
    #if ServiceLifecycle
        _ = start(configuration())
        guard let scene = ServiceGroupScenes.Scene(rawValue: mode) else { fail("unknown scene \(mode)") }
        DispatchBlocking.run { await ServiceGroupScenes.run(scene) }
        Blackbox.shutdown()
    #else
        fail("built without the ServiceLifecycle trait")
    #endif

case "exit-drain":
    _ = start(configuration())
    let logger = Logger(label: "exit")
    for i in 0..<1000 { logger.info("exit line \(i)") }
    exit(0)  // no flush, no shutdown: the atexit drain must write everything

case "fork":
    _ = start(configuration())
    let logger = Logger(label: "forker")
    logger.info("before fork")
    Blackbox.flush()
    let pid = fork()
    if pid == 0 {
        Logger(label: "forker").info("from the child")
        _exit(0)
    }
    var status: Int32 = 0
    waitpid(pid, &status, 0)
    logger.info("after fork, child status \(status)")
    Blackbox.shutdown()
    say("done")

case "present-error":
    // A recoverable error shown by the terminal presenter on the real stdin/stdout.
    let error = DiagnosticError(
        domain: "com.example.sync", code: 4, developerDescription: "the server rejected the upload",
        userInfo: .init(
            failureReason: "the session expired", recoverySuggestion: "sign in again",
            recovery: Recovery(options: ["Sign in", "Work offline"]) { index in index == 0 }))
    let outcome = DispatchBlocking.run { await TerminalErrorPresenter().present(error) }
    say("outcome: \(outcome)")

case "own-core-ensure":
    let core: LoggingCore
    do {
        core = try LoggingCore(configuration: configuration())
    } catch {
        fail("\(error)")
    }
    Assertions.policy = .neverTrap
    Logger(label: "app") { BlackboxLogHandler(label: $0, core: core) }.info("before the failed ensure")
    Blackbox.withScope(DiagnosticScope(route: "/sum", requestID: "req-9")) {
        if !ensure(1 + 1 == 3, "arithmetic changed", level: .warning) { say("went on") }
    }
    core.shutdown()

case "capture-errors":
    let core: LoggingCore
    do {
        core = try LoggingCore(configuration: configuration())
    } catch {
        fail("\(error)")
    }
    struct QuotaExceeded: Error { var tenant: String }
    let refused = DiagnosticError(
        domain: "shop.payments", code: 402, developerDescription: "card refused",
        userInfo: .init(failureReason: "the issuer declined", custom: ["order": "o-17"]))
    Blackbox.withScope(DiagnosticScope(route: "/pay", method: "POST", requestID: "req-5")) {
        for error in [refused, refused, refused] as [any Error] + [QuotaExceeded(tenant: "t1")] {
            Blackbox.capture(error, "paying")
        }
    }
    say("captured")
    core.shutdown()

case "logged-errors":
    var settings = configuration()
    settings.capturesLoggedErrors = arguments.count < 4 || arguments[3] != "off"
    let core: LoggingCore
    do {
        core = try LoggingCore(configuration: settings)
    } catch {
        fail("\(error)")
    }
    struct CarrierTimeout: Error { var carrier: String }
    struct ParcelLost: Error {}
    let logger = Logger(label: "shop") { BlackboxLogHandler(label: $0, core: core) }
    // One site: a report for its first error, one for the first of another type, the rest counted
    // (by the writer: `CaptureGates`) into the report due after the interval.
    // `scoped`: the calls after the first run in a request's scope, as a server's handlers do; the
    // site's budget is one in and out of the scope.
    let scoped = arguments.count >= 4 && arguments[3] == "scoped"
    // The first attempts must fall inside one interval: the first capture of a debug build on a
    // loaded machine took more than a second (a fresh-clone CI run beside a build).
    Assertions.reportInterval = .seconds(4)
    let siteLine = #line + 7
    for attempt in 0..<5 {
        if attempt == 4 {
            core.flush()
            usleep(4_200_000)
        }
        let error: any Error = attempt == 2 ? ParcelLost() : CarrierTimeout(carrier: attempt == 4 ? "dhl-again" : "dhl")
        func logError() { logger.error("the carrier did not answer", error: error) }
        if scoped && attempt > 0 {
            Blackbox.withScope(DiagnosticScope(route: "/ship", method: "POST", requestID: "req-\(attempt)")) {
                logError()
            }
        } else {
            logError()
        }
    }
    say("site error \(siteLine)")
    logger.critical("the carrier is gone", error: CarrierTimeout(carrier: "ups"))
    logger.warning("the carrier was slow", error: CarrierTimeout(carrier: "gls"))
    logger.error("no carrier answered")
    say("logged")
    core.shutdown()
    // Shut down, lines go to stderr on the caller's thread: the error described there.
    logger.warning("the carrier answered late", error: CarrierTimeout(carrier: "late"))

case "throw-sites":
    let core: LoggingCore
    do {
        core = try LoggingCore(configuration: configuration())
    } catch {
        fail("\(error)")
    }
    struct OutOfStock: Error {}
    struct GatewayTimeout: Error {}
    struct Unmarked: Error {}
    let logger = Logger(label: "shop") { BlackboxLogHandler(label: $0, core: core) }
    func request(_ route: String, _ handler: @escaping @Sendable () throws -> Void) {
        let answered = DispatchBlocking.run {
            (try? await Blackbox.handleRequest(
                in: DiagnosticScope(route: route, method: "POST"), status: { (_: Int) in 200 },
                statusOfError: { _ in nil },
                handle: {
                    try handler()
                    return 200
                })) != nil
        }
        if answered { fail("\(route) did not throw") }
    }
    request("/pay") { throw DiagnosticError(domain: "shop.payments", code: 402, developerDescription: "refused") }
    say("site diagnostic \(#line - 1)")
    request("/cart") { throw Blackbox.thrown(OutOfStock()) }
    say("site thrown-cart \(#line - 1)")
    request("/order") { throw Blackbox.thrown(OutOfStock()) }
    say("site thrown-order \(#line - 1)")
    request("/ship") {
        do {
            throw GatewayTimeout()
        } catch {
            logger.error("the carrier did not answer", error: error)
            say("site logged \(#line - 1)")
            throw error
        }
    }
    request("/refund") { throw Unmarked() }
    core.shutdown()

case "first-capture-cost":
    let core: LoggingCore
    if arguments.count > 3, arguments[3] == "started" {
        core = start(configuration())
        usleep(300_000)
    } else {
        do {
            core = try LoggingCore(configuration: configuration())
        } catch {
            fail("\(error)")
        }
    }
    struct PaymentDeclined: Error {}
    func seconds(_ clock: clockid_t) -> Double {
        var now = timespec()
        clock_gettime(clock, &now)
        return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
    }
    let (wall, cpu) = (seconds(CLOCK_MONOTONIC), seconds(CLOCK_THREAD_CPUTIME_ID))
    Blackbox.capture(PaymentDeclined(), "paying")
    let (wallAfter, cpuAfter) = (seconds(CLOCK_MONOTONIC), seconds(CLOCK_THREAD_CPUTIME_ID))
    say("capture wall \(wallAfter - wall) cpu \(cpuAfter - cpu)")
    // The test checks the named report: on a loaded machine naming can take longer than the 3 s
    // shutdown waits for it (after which the report goes out unnamed, as it should).
    let namingDeadline = monotonicSeconds() + 60
    while directoryNames("\(directory)/outbox").contains(where: { $0.contains(".unnamed-") }),
        monotonicSeconds() < namingDeadline
    {
        usleep(10_000)
    }
    core.shutdown(timeout: .seconds(60))
    say("shutdown wall \(seconds(CLOCK_MONOTONIC) - wallAfter)")

case "hangs-per-runtime":
    func watchdogThreads() -> Int {
        directoryNames("/proc/self/task").filter { task in
            fileText("/proc/self/task/\(task)/comm")?.hasPrefix("bbx-hang-watch") == true
        }.count
    }
    for run in ["a", "b"] {
        var settings = configuration()
        settings.directory = "\(directory)/\(run)"
        guard let runtime = try? Blackbox.start(settings) else { fail("cannot start on \(settings.directory)") }
        // Never beats: the watchdog of the runtime running now must report it, into its directory.
        let heartbeat = Blackbox.hangHeartbeat("loop \(run)", deadline: .milliseconds(200))
        let outbox = "\(settings.directory)/outbox"
        let deadline = monotonicSeconds() + 30
        while directoryNames(outbox).filter({ $0.hasPrefix("hang-") && $0.hasSuffix(".json") }).isEmpty,
            monotonicSeconds() < deadline
        {
            usleep(20_000)
        }
        for name in directoryNames(outbox) where name.hasPrefix("hang-") && name.hasSuffix(".json") {
            say("report \(outbox)/\(name)")
        }
        runtime.shutdown()
        heartbeat.beat()
        // The thread ends at its next turn (at most a quarter of the deadline).
        let ended = monotonicSeconds() + 10
        while watchdogThreads() > 0, monotonicSeconds() < ended { usleep(10_000) }
        say("watchdog threads after shutdown \(run): \(watchdogThreads())")
    }

case "process-crashes":
    let outcome = CrashReportProcessor(directory: directory).processPending()
    for (report, path) in outcome.processed { say("\(path)\n\(report.textRendering)") }
    for path in outcome.quarantined { say("quarantined \(path)") }
    for failure in outcome.failures { say("failed \(failure)") }

default:
    fail("unknown mode \(mode)")
}

/// A minimal thread (Foundation's Thread would pull Foundation into the child).
final class Thread: @unchecked Sendable {
    private let body: @Sendable () -> Void
    init(_ body: @escaping @Sendable () -> Void) { self.body = body }
    func start() {
        let box = Unmanaged.passRetained(self).toOpaque()
        var thread = pthread_t()
        pthread_create(
            &thread, nil,
            { raw in
                let this = Unmanaged<Thread>.fromOpaque(raw!).takeRetainedValue()
                this.body()
                return nil
            }, box)
    }
}

/// Runs async work from top-level code and waits for it.
enum DispatchBlocking {
    final class Box<T>: @unchecked Sendable { var value: T? }

    static func run<T: Sendable>(_ body: @escaping @Sendable () async -> T) -> T {
        let box = Box<T>()
        let finished = Box<UnsafeMutablePointer<sem_t>>()
        finished.value = .allocate(capacity: 1)
        sem_init(finished.value!, 0, 0)
        Task.detached {
            box.value = await body()
            sem_post(finished.value!)
        }
        sem_wait(finished.value!)
        return box.value!
    }
}

func directoryNames(_ path: String) -> [String] {
    guard let stream = opendir(path) else { return [] }
    defer { closedir(stream) }
    var names: [String] = []
    while let entry = readdir(stream) {
        let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        if name != ".", name != ".." { names.append(name) }
    }
    return names
}

func fileText(_ path: String) -> String? {
    let fd = open(path, O_RDONLY)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    var bytes = [UInt8](repeating: 0, count: 256)
    let count = bytes.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
    return count >= 0 ? String(decoding: bytes.prefix(count), as: UTF8.self) : nil
}

func monotonicSeconds() -> Double {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
}
