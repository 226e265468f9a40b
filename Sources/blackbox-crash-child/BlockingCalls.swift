import Blackbox
import CBlackboxTestCrashes
import Dispatch
import Foundation

// Blocking calls while Blackbox's signals arrive (`blocking-calls disturbed|quiet`): one JSON line per
// call, what it returned and how long it took. First the case: a watched queue's work item
// sleeps 4 s, past its 1 s hang deadline, so the hang report's thread capture signals it (disturbed
// only); then the C harness's calls, with thread captures and sweeps every 100 ms.

private final class Outcome: @unchecked Sendable {
    private let lock = NSLock()
    private var value: (elapsed: Double, result: UInt32)?
    func set(_ elapsed: Double, _ result: UInt32) { lock.withLock { value = (elapsed, result) } }
    func get() -> (elapsed: Double, result: UInt32)? { lock.withLock { value } }
}

func blockingCalls(disturbed: Bool) -> String {
    let queue = DispatchQueue(label: "bbx-hung-queue")
    if disturbed { Blackbox.watchForHangs(queue: queue, name: "bbx-hung-queue", deadline: .seconds(1)) }
    let hung = Outcome()
    let done = DispatchSemaphore(value: 0)
    queue.async {
        let started = Date()
        let left = sleep(4)
        hung.set(Date().timeIntervalSince(started) * 1000, left)
        done.signal()
    }
    var results = [bbx_test_call_result](repeating: bbx_test_call_result(), count: 32)
    let count = Int(bbx_test_blocking_calls(disturbed ? 1 : 0, &results, Int32(results.count)))
    done.wait()
    var lines: [String] = []
    if let (elapsed, left) = hung.get() {
        lines.append(
            """
            {"name": "sleep-in-a-hung-queue", "elapsedMs": \(Int(elapsed)), "expectedMs": 4000, \
            "result": \(left), "expectedResult": 0, "error": 0, "expectedError": 0}
            """)
    }
    return (lines + results.prefix(max(0, count)).map(jsonLine)).joined(separator: "\n")
}

/// `blocking-calls racing`: short calls made again and again while thread captures follow each other
/// for 1.5 s; each line's `result` is how many of the calls returned EINTR, `expectedMs` how many were made.
func blockingCallRaces() -> String {
    var results = [bbx_test_call_result](repeating: bbx_test_call_result(), count: 8)
    let count = Int(bbx_test_blocking_call_races(1500, &results, Int32(results.count)))
    return results.prefix(max(0, count)).map(jsonLine).joined(separator: "\n")
}

private func jsonLine(_ result: bbx_test_call_result) -> String {
    """
    {"name": "\(String(cString: result.name))", "startedMs": \(result.started_ms), \
    "elapsedMs": \(result.elapsed_ms), "expectedMs": \(result.expected_ms), "result": \(result.result), \
    "expectedResult": \(result.expected_result), "error": \(result.error), "expectedError": \(result.expected_error)}
    """
}
