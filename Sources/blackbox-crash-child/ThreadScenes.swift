import Blackbox
import CBlackboxTestCrashes
import Dispatch
import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

// Processes with many threads in known states, for the all-threads capture: each state is its own
// non-inlined function so the tests can find it in the thread's frames.

/// The mutex the scene's threads block on, shared by address.
final class SceneMutex: @unchecked Sendable {
    let pointer = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
}
let scene = SceneMutex()

/// Eight named threads: three blocked on a mutex that a fourth holds while it sleeps, one blocked in
/// `read` on a pipe nobody writes, one spinning, one waiting on a condition, one sleeping. Returns
/// once all are in place.
func startEightNamedThreads() {
    let ready = DispatchSemaphore(value: 0)
    pthread_mutex_init(scene.pointer, nil)
    let held = DispatchSemaphore(value: 0)
    startNamedThread("bbx-holder") {
        pthread_mutex_lock(scene.pointer)
        held.signal()
        ready.signal()
        holdTheMutex()
    }
    held.wait()
    for index in 1...3 {
        startNamedThread("bbx-mutex-\(index)") {
            ready.signal()
            waitForTheMutex(scene.pointer)
        }
    }
    var pipeEnds: [Int32] = [0, 0]
    _ = pipe(&pipeEnds)
    let readEnd = pipeEnds[0]
    startNamedThread("bbx-read") {
        ready.signal()
        waitInRead(readEnd)
    }
    startNamedThread("bbx-spin") {
        ready.signal()
        spinForever()
    }
    startNamedThread("bbx-cond") {
        ready.signal()
        waitOnCondition()
    }
    startNamedThread("bbx-sleep") {
        ready.signal()
        sleepForever()
    }
    for _ in 0..<8 { ready.wait() }
    // Each signalled just before it blocks: wait until the kernel has them asleep there, and the
    // spinner has spun (a crash while it was still signalling found it in sem_post, under load).
    waitUntilAsleep(["bbx-holder", "bbx-mutex-1", "bbx-mutex-2", "bbx-mutex-3", "bbx-read", "bbx-cond", "bbx-sleep"])
    let deadline = Date().addingTimeInterval(30)
    while spinCounter.load(ordering: .relaxed) == 0 && Date() < deadline { usleep(1_000) }
}

/// `count` threads named `bbx-idle-<n>`, each sleeping in `sleepForever`.
func startIdleThreads(_ count: Int) {
    let ready = DispatchSemaphore(value: 0)
    for index in 0..<count {
        startNamedThread("bbx-idle-\(index)") {
            ready.signal()
            sleepForever()
        }
    }
    for _ in 0..<count { ready.wait() }
    waitUntilAsleep((0..<count).map { "bbx-idle-\($0)" })
}

/// Polls /proc until every thread named in `names` sleeps (state S or D), at most 30 s: a fixed
/// pause is not enough on a loaded machine.
func waitUntilAsleep(_ names: [String]) {
    let wanted = Set(names)
    let deadline = Date().addingTimeInterval(30)
    while Date() < deadline {
        var asleep = 0
        for task in (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? [] {
            let base = "/proc/self/task/\(task)"
            guard let name = try? String(contentsOfFile: base + "/comm", encoding: .utf8),
                wanted.contains(name.trimmingCharacters(in: .newlines)),
                let stat = try? String(contentsOfFile: base + "/stat", encoding: .utf8),
                let close = stat.lastIndex(of: ")")
            else { continue }
            let state = stat[stat.index(after: close)...].dropFirst().first
            if state == "S" || state == "D" { asleep += 1 }
        }
        if asleep == wanted.count { return }
        usleep(5_000)
    }
}

func startNamedThread(_ name: String, _ body: @escaping @Sendable () -> Void) {
    let thread = Thread {
        bbx_test_name_thread(name)
        body()
    }
    thread.stackSize = 256 << 10
    thread.start()
}

@inline(never) func holdTheMutex() {
    while true { sleep(1) }
}

@inline(never) func waitForTheMutex(_ mutex: UnsafeMutablePointer<pthread_mutex_t>) {
    pthread_mutex_lock(mutex)
    exit(5)  // never: the holder keeps it
}

@inline(never) func waitInRead(_ fd: Int32) {
    var byte: UInt8 = 0
    if read(fd, &byte, 1) >= 0 { exit(6) }
}

let spinCounter = Atomic<Int>(0)

@inline(never) func spinForever() {
    while spinOnce() {}
    exit(7)
}

/// Not inlined, so the optimizer cannot reduce the loop around it to its final value.
@inline(never) func spinOnce() -> Bool {
    spinCounter.wrappingAdd(1, ordering: .relaxed).newValue != -1
}

@inline(never) func waitOnCondition() {
    let condition = NSCondition()
    condition.lock()
    while true { condition.wait() }
}

@inline(never) func sleepForever() {
    // Not `sleep(1)`: a release build would merge it with `holdTheMutex`, whose body is that.
    while true { usleep(500_000) }
}

/// A thread named `bbx-loader` that stops inside a `dl_iterate_phdr` callback, holding the loader
/// lock libunwind needs (as a thread caught inside `dlopen` would). Returns once it holds it.
func startThreadHoldingTheLoaderLock() {
    startNamedThread("bbx-loader") { bbx_test_hold_loader_lock() }
    while bbx_test_loader_lock_held() == 0 { usleep(1_000) }
}

/// Beats a 1 s heartbeat from the main thread every 100 ms for `seconds`.
func beatFromMain(_ heartbeat: HangHeartbeat, seconds: Double) {
    let end = Date().addingTimeInterval(seconds)
    while Date() < end {
        heartbeat.beat()
        usleep(100_000)
    }
}

/// The main thread stops answering for three seconds.
@inline(never) func blockTheMainThread() {
    for _ in 0..<30 { usleep(100_000) }
}

/// A work item that keeps its serial queue busy for three seconds.
@inline(never) func blockTheQueue() {
    for _ in 0..<30 { usleep(100_000) }
}

/// A crash two awaits deep inside a `Task`: `awaitingCaller` awaits `awaitedCallee`, which suspends
/// once (so the chain runs through real async contexts) and then faults.
func crashInsideATask() -> Never {
    Task.detached { await awaitingCaller() }
    while true { sleep(1) }
}

/// The same chain run as a task group's child.
func crashInsideATaskGroupChild() -> Never {
    Task.detached {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await awaitingCaller() }
        }
    }
    while true { sleep(1) }
}

/// The same chain entered from the main actor: `mainActorCaller` runs on the main thread (the main
/// queue is serviced) and awaits `awaitingCaller`, which hops to the cooperative pool.
func crashAfterAMainActorHop() -> Never {
    Task { @MainActor in await mainActorCaller() }
    dispatchMain()
}

@MainActor @inline(never) func mainActorCaller() async {
    await awaitingCaller()
    exit(8)
}

@inline(never) func awaitingCaller() async {
    await awaitedCallee()
    exit(8)  // never: the callee crashes
}

@inline(never) func awaitedCallee() async {
    await Task.yield()
    triggerNullWrite()
}
