@_spi(Benchmarks) import Blackbox
import CBlackboxTestCrashes
import Dispatch
import Foundation
import Logging

// Crashes on purpose, for the crash-capture tests (never shipped).
//
// Usage: blackbox-crash-child DIR KIND WHERE
//   KIND:  fatal-error index nil-unwrap overflow null-write divide-by-zero abort sigbus stack-overflow
//          wait-for-signal (prints "ready", then waits for an external kill -SEGV) handler-fault
//          handler-fault-unprotected two-threads ensure (five failures of one ensure: traps in
//          debug, reports once and goes on in release) unreachable eight-threads (ThreadScenes)
//          writer-crash (a logged error whose description traps, on the log writer's thread)
//          threads-N (N idle threads, then a null write) loader-lock (eight-threads, and one
//          holding the loader lock) wait-to-be-killed (prints "ready", waits for a SIGKILL)
//          clean-exit exhaust-memory (until the OOM killer ends it) annotated (crash annotations,
//          one rewritten by another thread during the crash) hang-main hang-queue healthy (a
//          watched main loop or queue blocked for 3 s at a 1 s deadline, or never; exit 0)
//          async-task (a crash two awaits deep inside a detached Task) async-group (the same in a
//          task group's child) async-main-actor (the same entered from a MainActor function)
//          scoped-requests scoped-child scoped-unstructured scoped-detached scoped-thread (request
//          scopes at a crash: ScopeScenes)
//   WHERE: main, thread (a Foundation Thread given an alternate signal stack), dispatch, task (a
//          detached Task), plain-thread (a Foundation Thread that prepares nothing). A stack overflow
//          off the main thread first waits (5 s at most) until Blackbox's sweep gave the thread an
//          alternate signal stack, as a long-running server thread would have one.
//          new-task, new-dispatch, new-thread: the same on a thread started after `Blackbox.start`,
//          at once, with the sweep off (only a stack installed as the thread started can save it).
// or: blackbox-crash-child DIR process-pending next (the next launch: processes the pending raw
// reports the way an app does at start, prints each processed report's path, and exits)
// or: blackbox-crash-child DIR new-thread-coverage N (N Foundation threads, N Dispatch blocks on queues
// of their own and N detached Tasks, started after `Blackbox.start`, each checking at once whether it
// has an alternate signal stack; prints a JSON line: how many had none, and CrashCapture's coverage
// after a sweep)
// or: blackbox-crash-child DIR blocking-calls disturbed|quiet (sleeps, polls, waits on threads of
// their own while thread captures and sweeps signal them, or not; a JSON line per call:
// BlockingCalls.swift)
// or: blackbox-crash-child DIR thread-start-cost N (starts and joins N threads one after another,
// sweep off; prints a JSON line of the nanoseconds each took; CRASH_CHILD_COVER_NEW_THREADS=0 turns
// the coverage of new threads off, for the benchmark's comparison)
//
// CRASH_CHILD_DELIVERY_HELPER (with _SERVER, _KEY, _DEADLINE_MS) turns on crash-time delivery;
// with CRASH_CHILD_DELIVERY_SENTRY_DSN instead of _SERVER and _KEY, to a Sentry server.
// CRASH_CHILD_CRASH_AFTER_MS waits that long after `Blackbox.start` before crashing;
// CRASH_CHILD_REMOVE_PENDING=1 removes crashes/pending/ first (no report can be written);
// CRASH_CHILD_REFUSE_VM_READV=1 refuses process_vm_readv with a seccomp filter (as Docker does).
// CRASH_CHILD_WRITER_LATE=1 logs to stdout too, with the log writer held from before the last line
// until the raw report is complete (its `end` line): a writer that had not caught up at the crash;
// =forever: held for good (a writer that never comes back).
//
// Before crashing it logs "about to crash: KIND on WHERE" so the tests can find the line in the
// report's log tail.

let arguments = CommandLine.arguments
guard arguments.count == 4 else {
    FileHandle.standardError.write(Data("usage: blackbox-crash-child DIR KIND WHERE\n".utf8))
    exit(2)
}
let (directory, kind, place) = (arguments[1], arguments[2], arguments[3])
// Before any thread starts, so that every thread inherits the filter.
if ProcessInfo.processInfo.environment["CRASH_CHILD_REFUSE_VM_READV"] == "1" {
    let status = bbx_test_refuse_process_vm_readv()
    guard status == 0 else {
        FileHandle.standardError.write(Data("cannot install the seccomp filter: \(status)\n".utf8))
        exit(2)
    }
}

var configuration = BlackboxConfiguration(appName: "crash-child", directory: directory)
configuration.appVersion = "1.0"
configuration.appBuild = "42"
configuration.sinks = [.file]
configuration.crashReporting.metadata = ["test": "crash-matrix"]
let environment = ProcessInfo.processInfo.environment
let writerLate = environment["CRASH_CHILD_WRITER_LATE"]
if writerLate != nil { configuration.sinks = [.file, .standardOutput] }
if kind.hasPrefix("scoped-") { configuration.metadataProvider = FakeTracing.metadataProvider }
if place.hasPrefix("new-") || kind == "thread-start-cost" { configuration.crashReporting.alternateStackSweep = nil }
configuration.crashReporting.coverNewThreads = environment["CRASH_CHILD_COVER_NEW_THREADS"] != "0"
// Tests process pending reports themselves, unless they ask the start to (as an app's does).
configuration.crashReporting.processPendingAtStart = environment["CRASH_CHILD_PROCESS_AT_START"] == "1"
// Crash-time delivery, for its tests: the helper, the collector, the key and the deadline in ms.
if let helper = environment["CRASH_CHILD_DELIVERY_HELPER"] {
    var delivery = CrashTimeDelivery(
        executable: helper, server: environment["CRASH_CHILD_DELIVERY_SERVER"] ?? "",
        key: environment["CRASH_CHILD_DELIVERY_KEY"] ?? "")
    if let dsn = environment["CRASH_CHILD_DELIVERY_SENTRY_DSN"] {
        delivery = CrashTimeDelivery(executable: helper, sentryDSN: dsn)
    }
    if let milliseconds = environment["CRASH_CHILD_DELIVERY_DEADLINE_MS"].flatMap(Int64.init) {
        delivery.deadline = .milliseconds(milliseconds)
    }
    configuration.crashReporting.deliveryAtCrash = delivery
    // A descriptor an app forgot to mark close-on-exec: the helper must not inherit it.
    _ = open("\(directory)-app-descriptor", O_CREAT | O_RDWR, 0o600)
}
let runtime: BlackboxRuntime
do {
    runtime = try Blackbox.start(configuration)
} catch {
    FileHandle.standardError.write(Data("\(error)\n".utf8))
    exit(2)
}
let logger = Logger(label: "crash-child")

if kind == "process-pending" {
    for processed in Blackbox.processPendingCrashReports().processed { print(processed.path) }
    exit(0)
}
if kind == "new-thread-coverage" {
    print(newThreadCoverage(Int(place) ?? 8))
    exit(0)
}
if kind == "blocking-calls" {
    print(place == "racing" ? blockingCallRaces() : blockingCalls(disturbed: place == "disturbed"))
    Blackbox.flush()
    exit(0)
}
if kind == "thread-start-cost" {
    print(threadStartCost(Int(place) ?? 1000))
    exit(0)
}

// The diagnostics directory's pending folder removed after start: the handler cannot write a report.
if environment["CRASH_CHILD_REMOVE_PENDING"] == "1" {
    rmdir("\(directory)/crashes/pending")
}
// A crash this long after start (the start-up crashes of a bad configuration or a crash loop).
if let milliseconds = environment["CRASH_CHILD_CRASH_AFTER_MS"].flatMap(UInt32.init) {
    usleep(milliseconds * 1000)
}
switch writerLate {
case "1": holdWriterUntilReported(runtime.core, pending: "\(directory)/crashes/pending")
case "forever": runtime.core.holdWriter(true)
default: break
}
logger.info("about to crash: \(kind) on \(place)")
switch place {
case "main":
    crash(kind)
case "thread":
    let thread = Thread {
        CrashCapture.prepareCurrentThread()
        crash(kind)
    }
    thread.stackSize = 1 << 20
    thread.start()
    waitForever()
case "dispatch":
    DispatchQueue.global().async {
        if kind == "stack-overflow" { waitForAlternateStack() }
        crash(kind)
    }
    waitForever()
case "task":
    Task.detached {
        if kind == "stack-overflow" { waitForAlternateStack() }
        crash(kind)
    }
    waitForever()
case "plain-thread":
    // An app's thread that never calls `CrashCapture.prepareCurrentThread()`.
    let thread = Thread {
        if kind == "stack-overflow" { waitForAlternateStack() }
        crash(kind)
    }
    thread.stackSize = 1 << 20
    thread.start()
    waitForever()
case "new-task":
    Task.detached { crash(kind) }
    waitForever()
case "new-dispatch":
    DispatchQueue.global().async { crash(kind) }
    waitForever()
case "new-thread":
    let thread = Thread { crash(kind) }
    thread.stackSize = 1 << 20
    thread.start()
    waitForever()
default:
    FileHandle.standardError.write(Data("unknown place \(place)\n".utf8))
    exit(2)
}
// Reaching here means the crash did not happen.
exit(3)
