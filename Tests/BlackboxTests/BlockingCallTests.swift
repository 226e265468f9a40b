import BlackboxTestSupport
import Foundation
import Testing

/// Blackbox's signals (a hang report's thread capture, the alternate-stack sweep) do not change what the
/// app's blocking calls return or how long they block (issue 49, item 7): the crash child's
/// `blocking-calls` mode runs sleeps, polls, selects, epoll waits, a pipe read, a semaphore and a
/// condition wait on threads of their own while captures and sweeps signal them every 100 ms.
@Suite("Blocking calls under Blackbox's signals")
struct BlockingCallTests {
    struct Call: Decodable, CustomStringConvertible {
        var name: String
        var elapsedMs: Int
        var expectedMs: Int
        var result: Int
        var expectedResult: Int
        var error: Int32
        var expectedError: Int32
        var description: String { "\(name): \(result) (errno \(error)) after \(elapsedMs) ms" }
    }

    /// The calls left to return EINTR (docs/crash-capture.md says so): epoll_wait with a timeout (the
    /// kernel keeps no time left for it, so it can be neither resumed nor repeated; event loops such as
    /// SwiftNIO's and Dispatch's call it again), and sem_timedwait (a futex wait: resuming those would
    /// hold every idle thread's timed wait in the handler; POSIX lets it fail with EINTR).
    static let keepsItsEINTR: Set = ["epoll-timeout", "sem_timedwait"]

    func calls(_ mode: String, build: Build, environment: [String: String] = [:]) throws -> [Call] {
        let directory = TemporaryDirectory()
        let executable = "\(try #require(build.binDirectory))/blackbox-crash-child"
        let result = try runProgram(executable, [directory.path, "blocking-calls", mode], environment: environment)
        #expect(result.status == 0 && !result.signaled, "\(result.stderr)")
        let calls = try result.stdout.split(separator: "\n").filter { $0.hasPrefix("{") }.map {
            try JSONDecoder().decode(Call.self, from: Data($0.utf8))
        }
        #expect(calls.count == 15, "\(result.stdout)")
        return calls
    }

    func checkEachReturnsWhatItWould(_ calls: [Call]) {
        for call in calls where !Self.keepsItsEINTR.contains(call.name) {
            #expect(call.result == call.expectedResult && call.error == call.expectedError, "\(call)")
            // Not cut short (a millisecond of rounding; the app's own signal cuts its call short when
            // it is sent), nor held much past its time.
            if call.expectedError != EINTR { #expect(call.elapsedMs >= call.expectedMs - 1, "\(call)") }
            #expect(call.elapsedMs < call.expectedMs + 1500, "\(call)")
        }
        for call in calls where Self.keepsItsEINTR.contains(call.name) {
            #expect(
                (call.result == call.expectedResult && call.error == call.expectedError) || call.error == EINTR,
                "\(call)")
        }
    }

    @Test("undisturbed, every call returns what the check expects (so the checks below can fail)")
    func quiet() throws {
        checkEachReturnsWhatItWould(try calls("quiet", build: .debug))
    }

    @Test(
        "thread captures every 100 ms and a hang report leave each call's result and duration as they were; the app's own signal still interrupts",
        arguments: CrashMatrixTests.debugAndRelease)
    func underCaptures(build: Build) throws {
        checkEachReturnsWhatItWould(try calls("disturbed", build: build))
    }

    /// A capture's handler answers before it resumes the thread's call, so the next capture's read finds
    /// the thread still in the handler, and its signal meets the call made again: the sender's note is
    /// stale. Before the handler read the call from the context itself, a fifth of these calls returned
    /// EINTR (215-332 of ~1,230 ppolls and selects in 1.5 s).
    @Test(
        "1 ms ppolls, selects and nanosleeps made again and again under back-to-back thread captures never return EINTR",
        arguments: CrashMatrixTests.debugAndRelease)
    func underBackToBackCaptures(build: Build) throws {
        let directory = TemporaryDirectory()
        let executable = "\(try #require(build.binDirectory))/blackbox-crash-child"
        let result = try runProgram(executable, [directory.path, "blocking-calls", "racing"])
        #expect(result.status == 0 && !result.signaled, "\(result.stderr)")
        let calls = try result.stdout.split(separator: "\n").filter { $0.hasPrefix("{") }.map {
            try JSONDecoder().decode(Call.self, from: Data($0.utf8))
        }
        #expect(calls.map(\.name) == ["ppoll-repeated", "select-repeated", "nanosleep-repeated"], "\(result.stdout)")
        for call in calls {
            // `expectedMs` carries the number of calls made: hundreds, or the race was hardly run.
            #expect(call.expectedMs > 200, "\(call)")
            #expect(call.result == 0, "\(call.result) of \(call.expectedMs) calls returned EINTR: \(call)")
        }
    }

    @Test("the same where the sweep signals the threads too (new threads not covered at start)")
    func underCapturesAndSweeps() throws {
        checkEachReturnsWhatItWould(
            try calls("disturbed", build: .debug, environment: ["CRASH_CHILD_COVER_NEW_THREADS": "0"]))
    }
}
