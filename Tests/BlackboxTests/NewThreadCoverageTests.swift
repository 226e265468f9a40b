import BlackboxTestSupport
import Foundation
import Testing

/// Threads started after `Blackbox.start` have their alternate signal stack from their first
/// instruction (the crash matrix's new-* places overflow there), and the sweep never signals them.
@Suite("New threads' alternate stacks")
struct NewThreadCoverageTests {
    struct Coverage: Decodable {
        var without: [String: Int]
        var coveredAtStart: Int
        var givenBySweep: Int
        var withTheirOwn: Int
    }

    func coverage(build: Build, environment: [String: String] = [:]) throws -> Coverage {
        let directory = TemporaryDirectory()
        let executable = "\(try #require(build.binDirectory))/blackbox-crash-child"
        let result = try runProgram(
            executable, [directory.path, "new-thread-coverage", "16"], environment: environment)
        #expect(result.status == 0 && !result.signaled, "\(result.stderr)")
        let line = try #require(result.stdout.split(separator: "\n").last, "no output: \(result.stderr)")
        return try JSONDecoder().decode(Coverage.self, from: Data(line.utf8))
    }

    @Test(
        "Foundation threads, Dispatch workers and Tasks started after start each have a stack at once; the sweep offers none",
        arguments: CrashMatrixTests.debugAndRelease)
    func coveredFromTheFirstInstruction(build: Build) throws {
        let seen = try coverage(build: build)
        #expect(seen.without == ["thread": 0, "dispatch": 0, "task": 0])
        // 16 Foundation threads at least; Dispatch and the Swift runtime start workers as they choose.
        #expect(seen.coveredAtStart >= 16)
        // The sweep ran (1 s) while Dispatch's and the runtime's workers lived: it signalled none of
        // them (each registered itself as it started), nor anything else (nothing started before).
        #expect(seen.givenBySweep == 0)
        #expect(seen.withTheirOwn > 0)
    }

    @Test("with coverNewThreads off, threads start without one (the check above can fail)")
    func offLeavesThemToTheSweep() throws {
        let seen = try coverage(build: .debug, environment: ["CRASH_CHILD_COVER_NEW_THREADS": "0"])
        #expect(seen.coveredAtStart == 0)
        #expect((seen.without["thread"] ?? 0) == 16)
        // The sweep (1 s) gave the living ones theirs by signal instead.
        #expect(seen.givenBySweep > 0)
    }
}
