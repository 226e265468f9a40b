import Blackbox
import Foundation
import Logging
import Synchronization

// Request scopes at a crash (`Blackbox.withScope`): the report must name the crashing task's own
// scope, never another request's.

private let requestsInScope = Atomic<Int>(0)

/// Stands in for swift-otel's metadata provider: each request's own trace id, from a task-local.
enum FakeTracing {
    @TaskLocal static var traceID: String?
    static let metadataProvider = Logger.MetadataProvider {
        traceID.map { ["trace_id": "\($0)", "span_id": "span-of-\($0)"] } ?? [:]
    }
}

/// 64 concurrent "requests" on the cooperative pool, each in its own scope; once all are in, request
/// 37 enters a nested scope (a user id) and crashes while the others keep entering and leaving nested
/// scopes of their own on the other pool thread.
func crashInOneOfManyScopedRequests() -> Never {
    Task.detached {
        await withTaskGroup(of: Void.self) { group in
            for index in 0..<64 {
                group.addTask {
                    await FakeTracing.$traceID.withValue("trace-\(index)") { await serveScopedRequest(index) }
                }
            }
        }
    }
    while true { sleep(1) }
}

/// The hang of `crashInOneOfManyScopedRequests`: request 37 beats a watched heartbeat once, then
/// blocks its pool thread for three seconds (a blocking call in an async handler); the other requests
/// keep entering and leaving scopes. The hang report names request 37 as the blocked thread's scope,
/// and the process recovers and exits 0.
func hangInOneOfManyScopedRequests() -> Never {
    let heartbeat = Blackbox.hangHeartbeat("requests", deadline: .seconds(1))
    Task.detached {
        await withTaskGroup(of: Void.self) { group in
            for index in 0..<64 {
                group.addTask {
                    await FakeTracing.$traceID.withValue("trace-\(index)") {
                        await serveScopedRequest(index) {
                            heartbeat.beat()
                            blockTheCurrentThread()
                            heartbeat.beat()
                            heartbeat.stop()
                        }
                    }
                }
            }
        }
    }
    // Not one sleep(6): the hang report's thread capture interrupts sleeps (EINTR).
    let end = Date().addingTimeInterval(6)
    while Date() < end { usleep(100_000) }
    Blackbox.flush()
    exit(0)
}

/// Request 37's synchronous block (`usleep`, as a blocking system call would).
@inline(never) func blockTheCurrentThread() {
    for _ in 0..<30 { usleep(100_000) }
}

private func serveScopedRequest(_ index: Int, request37: () -> Void = { triggerNullWrite() }) async {
    let scope = DiagnosticScope(
        route: "/items/:id", method: index % 2 == 0 ? "GET" : "PUT", requestID: "req-\(index)",
        tags: ["tenant": "t\(index % 4)"])
    await Blackbox.withScope(scope) {
        requestsInScope.add(1, ordering: .relaxed)
        while requestsInScope.load(ordering: .relaxed) < 64 { try? await Task.sleep(for: .milliseconds(1)) }
        if index == 37 {
            await Blackbox.withScope(DiagnosticScope(userID: "user-37")) {
                await Task.yield()
                request37()
            }
        }
        while true {
            await Blackbox.withScope(DiagnosticScope(userID: "user-\(index)")) { await Task.yield() }
        }
    }
}

/// A scoped task whose `async let` child crashes: the child inherits the scope.
func crashInAChildOfAScopedTask() -> Never {
    Task.detached {
        await Blackbox.withScope(DiagnosticScope(route: "/parent", requestID: "req-parent")) {
            async let child: Void = crashingChild()
            await child
        }
    }
    while true { sleep(1) }
}

/// A scoped task starts an unstructured `Task {}` that crashes (what Vapor's async responders do).
func crashInAnUnstructuredTaskOfAScopedTask() -> Never {
    Task.detached {
        await Blackbox.withScope(DiagnosticScope(route: "/spawner", requestID: "req-spawner")) {
            await Task { await crashingChild() }.value
        }
    }
    while true { sleep(1) }
}

/// A scoped task starts a `Task.detached` that crashes: detached tasks inherit no task-local value.
func crashInADetachedTaskOfAScopedTask() -> Never {
    Task.detached {
        await Blackbox.withScope(DiagnosticScope(route: "/detacher", requestID: "req-detacher")) {
            await Task.detached { await crashingChild() }.value
        }
    }
    while true { sleep(1) }
}

@inline(never) private func crashingChild() async {
    await Task.yield()
    triggerNullWrite()
}

/// Synchronous code on a thread of its own, outside any task, in a scope.
func crashInAThreadScope() -> Never {
    let thread = Thread {
        CrashCapture.prepareCurrentThread()
        Blackbox.withScope(DiagnosticScope(route: "job:reindex", requestID: "job-7")) { triggerNullWrite() }
    }
    thread.start()
    while true { sleep(1) }
}
