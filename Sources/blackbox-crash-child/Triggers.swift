@_spi(Benchmarks) import Blackbox
import CBlackboxTestCrashes
import Dispatch
import Foundation
import Logging

// The ways to crash. Each trigger is its own non-inlined function so the tests can check that frame 0
// (or the first frame in this binary) names it.

@inline(never) func triggerFatalError() { fatalError("crash-child fatal error") }

@inline(never) func triggerIndexOutOfRange(_ values: [Int], _ index: Int) -> Int { values[index] }

@inline(never) func triggerNilUnwrap(_ value: Int?) -> Int { value! }

@inline(never) func triggerOverflow(_ value: Int) -> Int { value + Int.max }

@inline(never) func triggerNullWrite() { bbx_test_null_write() }

@inline(never) func triggerDivideByZero(_ denominator: Int32) -> Int32 { bbx_test_divide(7, denominator) }

@inline(never) func triggerReadOnlyWrite() { bbx_test_read_only_write() }

@inline(never) func triggerExecuteHeap() { bbx_test_execute_heap() }

@inline(never) func triggerReadUnmapped() -> Int32 { bbx_test_read_unmapped() }

@inline(never) func triggerNonCanonicalWrite() { bbx_test_non_canonical_write() }

@inline(never) func triggerMisaligned() -> Int32 { bbx_test_misaligned() }

@inline(never) func triggerReadPastFileEnd() -> Int32 { bbx_test_read_past_file_end() }

@inline(never) func triggerTrap() { bbx_test_trap() }

@inline(never) func triggerFloatDivide(_ denominator: Double) -> Double { bbx_test_float_divide(denominator) }

final class Disposable {}

/// Reads an `unowned` reference to an object already freed: the runtime checks it.
@inline(never) func triggerUnownedRead() -> ObjectIdentifier {
    var strong: Disposable? = Disposable()
    unowned let weakly = strong!
    strong = nil
    return ObjectIdentifier(weakly)
}

nonisolated(unsafe) var sharedCounter = 0

@inline(never) func modify(_ value: inout Int, while body: () -> Void) {
    body()
    value += 1
}

/// Modifies a global while a modification of it is in progress: dynamic exclusivity enforcement.
@inline(never) func triggerExclusivityViolation() {
    modify(&sharedCounter) { sharedCounter += 1 }
}

@inline(never) func triggerAbort() { abort() }

@inline(never) func triggerSigbus() {
    // Using the result keeps the optimizer from turning this into a tail call (which would leave
    // this function out of the stack).
    if raise(SIGBUS) != 0 { exit(4) }
}

@inline(never) func triggerStackOverflow(_ depth: Int) -> Int {
    // Enough stack per frame that the guard page is reached quickly; `withExtendedLifetime` keeps the
    // buffer and the recursion from being optimized into a loop.
    var buffer = (depth, depth, depth, depth, depth, depth, depth, depth)
    return withUnsafeMutableBytes(of: &buffer) { raw in
        raw[0] = UInt8(truncatingIfNeeded: depth)
        return triggerStackOverflow(depth + Int(raw[0] & 1) + 1) + Int(raw[1])
    }
}

/// Fails the same `ensure` five times: one report (the call site is rate limited), and the caller
/// goes on in release builds.
@inline(never) func failEnsureRepeatedly() -> Int {
    var safePaths = 0
    for attempt in 0..<5 {
        if ensure(attempt < 0, "the attempt count must be negative") {
            return -1
        }
        safePaths += 1
    }
    return safePaths
}

@inline(never) func reachTheUnreachable(_ value: Int) -> Int {
    switch value {
    case 0...: return value
    default: unreachable("negative argument count \(value)")
    }
}

/// Until the calling thread has an alternate signal stack (Blackbox's sweep gives it one), 5 s at most.
func waitForAlternateStack() {
    for _ in 0..<500 {
        var current = stack_t()
        if sigaltstack(nil, &current) == 0, current.ss_flags & Int32(SS_DISABLE) == 0 { return }
        usleep(10_000)
    }
}

/// Until no report in `outbox` waits for its frames' names, 60 s at most. The test checks what the
/// naming thread writes; on a loaded machine naming can take longer than the 3 s shutdown waits for
/// it (after which the report goes out unnamed, as it should).
func waitForReportNaming(outbox: String) {
    for _ in 0..<6000 {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: outbox)) ?? []
        if !names.contains(where: { $0.contains(".unnamed-") }) { return }
        usleep(10_000)
    }
}

func waitForever() -> Never {
    while true { sleep(1) }
}

@inline(never) func crash(_ kind: String) {
    let runtimeInput = CommandLine.arguments.count  // opaque to the optimizer
    switch kind {
    case "fatal-error": triggerFatalError()
    case "index": _ = triggerIndexOutOfRange([1, 2, 3], runtimeInput + 5)
    case "nil-unwrap": _ = triggerNilUnwrap(runtimeInput > 100 ? 1 : nil)
    case "overflow": _ = triggerOverflow(runtimeInput)
    case "null-write": triggerNullWrite()
    case "divide-by-zero": _ = triggerDivideByZero(Int32(runtimeInput - 4))
    case "abort": triggerAbort()
    case "read-only-write": triggerReadOnlyWrite()
    case "execute-heap": triggerExecuteHeap()
    case "read-unmapped": _ = triggerReadUnmapped()
    case "non-canonical-write": triggerNonCanonicalWrite()
    case "misaligned": print(triggerMisaligned())
    case "read-past-file-end": _ = triggerReadPastFileEnd()
    case "trap": triggerTrap()
    case "float-divide": _ = triggerFloatDivide(Double(runtimeInput - 4))
    case "unowned-read": _ = triggerUnownedRead()
    case "exclusivity": triggerExclusivityViolation()
    case "sigbus": triggerSigbus()
    case "stack-overflow": _ = triggerStackOverflow(runtimeInput)
    case "ensure":
        let safePaths = failEnsureRepeatedly()
        FileHandle.standardOutput.write(Data("continued after \(safePaths) failed ensures\n".utf8))
        waitForReportNaming(outbox: "\(CommandLine.arguments[1])/outbox")
        Blackbox.shutdown()
        exit(0)
    case "writer-crash":
        // The writer prints the error's description: the crash is on its thread.
        Logger(label: "crash-child").warning("an error that cannot be described", error: UndescribableError())
        waitForever()
    case "unreachable":
        _ = reachTheUnreachable(-runtimeInput)
    case "wait-for-signal":
        FileHandle.standardOutput.write(Data("ready\n".utf8))
        waitForever()
    case "handler-fault":
        Blackbox.setCrashHandlerTestFault(1)
        triggerNullWrite()
    case "handler-fault-unprotected":
        Blackbox.setCrashHandlerTestFault(2)
        triggerNullWrite()
    case "two-threads":
        // Two threads fault at (nearly) the same moment; one report, no hang.
        let go = DispatchSemaphore(value: 0)
        for _ in 0..<2 {
            Thread.detachNewThread {
                CrashCapture.prepareCurrentThread()
                go.wait()
                triggerNullWrite()
            }
        }
        usleep(50_000)
        go.signal()
        go.signal()
        waitForever()
    case "annotated":
        // Set, changed, removed, then a crash while another thread keeps rewriting one of them.
        CrashAnnotations.set("user", "alice")
        CrashAnnotations.set("request-id", "r-1")
        CrashAnnotations.set("request-id", "r-42")
        CrashAnnotations.set("feature.flag", "on")
        CrashAnnotations.set("feature.flag", nil)
        CrashAnnotations.set("multi", "line one\nline two")
        Thread.detachNewThread {
            let values = [String(repeating: "a", count: 200), String(repeating: "b", count: 200)]
            var round = 0
            while true {
                CrashAnnotations.set("churn", values[round % 2])
                round += 1
            }
        }
        usleep(20_000)
        triggerNullWrite()
    case "hang-main":
        let heartbeat = Blackbox.hangHeartbeat("main loop", deadline: .seconds(1))
        beatFromMain(heartbeat, seconds: 1)
        blockTheMainThread()
        beatFromMain(heartbeat, seconds: 1.5)
        Blackbox.flush()
        exit(0)
    case "hang-queue":
        let queue = DispatchQueue(label: "bbx-queue")
        Blackbox.watchForHangs(queue: queue, name: "bbx-queue", deadline: .seconds(1))
        usleep(300_000)
        queue.async { blockTheQueue() }
        // One sleep: the hang report's thread capture resumes the call it interrupts (BlockingCallTests).
        sleep(5)
        Blackbox.flush()
        exit(0)
    case "healthy":
        let heartbeat = Blackbox.hangHeartbeat("main loop", deadline: .seconds(1))
        beatFromMain(heartbeat, seconds: 3)
        Blackbox.flush()
        exit(0)
    case "async-task":
        crashInsideATask()
    case "async-group":
        crashInsideATaskGroupChild()
    case "async-main-actor":
        crashAfterAMainActorHop()
    case "counted-requests":
        crashWithRequestsInFlight()
    case "scoped-requests":
        crashInOneOfManyScopedRequests()
    case "scoped-hang":
        hangInOneOfManyScopedRequests()
    case "scoped-child":
        crashInAChildOfAScopedTask()
    case "scoped-thread":
        crashInAThreadScope()
    case "scoped-unstructured":
        crashInAnUnstructuredTaskOfAScopedTask()
    case "scoped-detached":
        crashInADetachedTaskOfAScopedTask()
    case "wait-to-be-killed":
        // The line is in the journal already; flushing puts it in the log file too, as a long-running
        // process's earlier lines would be.
        Blackbox.flush()
        FileHandle.standardOutput.write(Data("ready\n".utf8))
        waitForever()
    case "clean-exit":
        exit(0)
    case "exhaust-memory":
        exhaustMemory()
    case "eight-threads":
        startEightNamedThreads()
        triggerNullWrite()
    case "loader-lock":
        startEightNamedThreads()
        startThreadHoldingTheLoaderLock()
        triggerNullWrite()
    case _ where kind.hasPrefix("threads-"):
        startIdleThreads(Int(kind.dropFirst("threads-".count)) ?? 0)
        triggerNullWrite()
    default:
        FileHandle.standardError.write(Data("unknown kind \(kind)\n".utf8))
        exit(2)
    }
}

/// Allocates and touches memory until the OOM killer ends the process (run it in a memory cgroup
/// with a limit).
@inline(never) func exhaustMemory() -> Never {
    var blocks: [UnsafeMutableRawPointer] = []
    while true {
        guard let block = malloc(16 << 20) else { continue }
        memset(block, 1, 16 << 20)
        blocks.append(block)
    }
}

/// Holds the log writer now and lets it go, from a thread of its own, once a raw report in `pending`
/// is complete (its last line is `end`): the lines logged meanwhile reach stdout only if the crash
/// handler waits for the writer after the report.
func holdWriterUntilReported(_ core: LoggingCore, pending: String) {
    core.holdWriter(true)
    Thread {
        while !hasCompleteReport(pending) { usleep(1000) }
        core.holdWriter(false)
    }.start()
}

private func hasCompleteReport(_ pending: String) -> Bool {
    let names = (try? FileManager.default.contentsOfDirectory(atPath: pending)) ?? []
    return names.contains { name in
        guard name.hasSuffix(".raw"), let bytes = FileManager.default.contents(atPath: "\(pending)/\(name)") else {
            return false
        }
        return bytes.suffix(5).elementsEqual("\nend\n".utf8)
    }
}

/// An app's error whose `description` traps: the writer thread, which prints it, crashes.
struct UndescribableError: Error, CustomStringConvertible {
    var description: String { fatalError("crash-child: a description that traps") }
}
