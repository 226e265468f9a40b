import Blackbox
import Foundation
import Synchronization

// Request health (`Blackbox.handleRequest` counts every request): what the next start must count.

private let inFlight = Atomic<Int>(0)

private struct RequestFailed: Error {
    var status: Int
}

/// 185 requests through `Blackbox.handleRequest`, one at a time: 150 answered 200, 20 answered 503,
/// 10 failing with a 500 and 5 with a 404 (the client's). Then 15 at once, which all wait until every
/// one is in flight, when the last crashes (a null write). The next start must count 200 requests,
/// 30 server errors and 15 cut short by the crash.
func crashWithRequestsInFlight() -> Never {
    Task.detached {
        let plan = Array(repeating: 200, count: 150) + Array(repeating: 503, count: 20)
        for status in plan { _ = try? await serve(answer: status) }
        for status in Array(repeating: 500, count: 10) + Array(repeating: 404, count: 5) {
            _ = try? await serve(failWith: status)
        }
        await withTaskGroup(of: Void.self) { group in
            for index in 0..<15 {
                group.addTask {
                    _ = try? await Blackbox.handleRequest(
                        in: DiagnosticScope(route: "/slow", requestID: "slow-\(index)"), status: { $0 },
                        statusOfError: { ($0 as? RequestFailed)?.status }
                    ) {
                        inFlight.add(1, ordering: .relaxed)
                        while inFlight.load(ordering: .relaxed) < 15 { try? await Task.sleep(for: .milliseconds(1)) }
                        if index == 14 { triggerNullWrite() }
                        while true { try? await Task.sleep(for: .seconds(1)) }
                    }
                }
            }
        }
    }
    while true { sleep(1) }
}

private func serve(answer status: Int) async throws -> Int {
    try await Blackbox.handleRequest(
        in: DiagnosticScope(route: "/items", requestID: UUID().uuidString), status: { $0 },
        statusOfError: { ($0 as? RequestFailed)?.status }, handle: { status })
}

private func serve(failWith status: Int) async throws -> Int {
    try await Blackbox.handleRequest(
        in: DiagnosticScope(route: "/items", requestID: UUID().uuidString), status: { $0 },
        statusOfError: { ($0 as? RequestFailed)?.status }, handle: { throw RequestFailed(status: status) })
}
