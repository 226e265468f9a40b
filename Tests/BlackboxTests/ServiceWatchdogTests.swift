#if ServiceLifecycle
    import BlackboxFormat
    import BlackboxTestSupport
    import Foundation
    import Testing

    @testable import Blackbox

    /// The ServiceGroup watchdog (issue 53 item 2) in a child process (`blackbox-test-child`'s
    /// `service-stall`, `service-healthy`): a group with a 1 s shutdown bound, shut down gracefully
    /// 300 ms after it starts.
    @Suite("ServiceGroup watchdog")
    struct ServiceWatchdogTests {
        func reports(in directory: TemporaryDirectory) throws -> [CrashReport] {
            let outbox = "\(directory.path)/outbox"
            return try directoryEntries(outbox).filter { $0.hasSuffix(".json") }.map { name in
                try CrashReport.decode(try #require(FileManager.default.contents(atPath: "\(outbox)/\(name)")))
            }
        }

        @Test(
            "a service that swallows its shutdown: a hang report naming the services still running, within the bound; then the exit status"
        )
        func stalledShutdown() throws {
            let directory = TemporaryDirectory()
            defer { directory.remove() }
            let started = ContinuousClock.now
            let result = try runProgram(helperExecutable("blackbox-test-child"), ["service-stall", directory.path])
            let elapsed = ContinuousClock.now - started
            #expect(result.status == 70 && !result.signaled, "exit 70 on the stall: \(result.stdout) \(result.stderr)")
            #expect(
                !result.stdout.contains("group finished"), "the stubborn service holds it for 20 s: \(result.stdout)")
            #expect(elapsed < .seconds(15), "the watchdog acted long before the stubborn service gave up: \(elapsed)")

            let all = try reports(in: directory)
            let hang = try #require(all.first { $0.kind == .hang }, "\(all.map(\.kind))")
            let reason = hang.reason ?? ""
            #expect(reason.hasPrefix("ServiceGroup did not finish within 1.0 s of shutting down"), "\(reason)")
            #expect(reason.contains("(graceful shutdown, told first to stubborn)"), "\(reason)")
            #expect(reason.contains("2 services still running"), "\(reason)")
            #expect(hang.metadata["hang.stall"] == "true", "no thread's hang: readers lead with the reason")
            #expect(
                hang.notes.contains { $0.hasPrefix("still running: stubborn (told graceful shutdown ") },
                "\(hang.notes)")
            #expect(hang.notes.contains("still running: polite (told nothing yet)"), "\(hang.notes)")
            #expect((hang.threads?.count ?? 0) >= 2, "every thread's stack")

            // The service that returned while its group kept running is an issue of its own.
            let ended = try #require(all.first { $0.kind == .error }, "\(all.map(\.kind))")
            #expect(
                ended.reason?.contains("service quitter returned while its group keeps running") == true,
                "\(ended.reason ?? "")")
            #expect(ended.metadata["error.code"] == "1" && ended.metadata["error.userInfo.service"] == "quitter")

            let logs = "\(directory.path)/logs"
            let log = directoryEntries(logs).filter { $0.hasSuffix(".log") }.compactMap {
                try? String(contentsOfFile: "\(logs)/\($0)", encoding: .utf8)
            }.joined()
            #expect(log.contains("CRIT  blackbox.services: ServiceGroup did not finish"), "\(log)")
        }

        @Test("a service's failure cancels the group and one swallows the cancellation: the report says so")
        func stalledCancellation() throws {
            let directory = TemporaryDirectory()
            defer { directory.remove() }
            let result = try runProgram(helperExecutable("blackbox-test-child"), ["service-failure", directory.path])
            #expect(result.status == 70 && !result.signaled, "\(result.stdout) \(result.stderr)")
            let hang = try #require(try reports(in: directory).first { $0.kind == .hang })
            let reason = hang.reason ?? ""
            #expect(reason.contains("(service failing threw Failure()): 1 service still running"), "\(reason)")
            #expect(
                hang.notes.contains { $0.hasPrefix("still running: stubborn (told cancellation ") }, "\(hang.notes)")
        }

        @Test("a group that shuts down in time: no report, the group finishes")
        func healthyShutdown() throws {
            let directory = TemporaryDirectory()
            defer { directory.remove() }
            let result = try runProgram(helperExecutable("blackbox-test-child"), ["service-healthy", directory.path])
            #expect(result.status == 0, "\(result.stdout) \(result.stderr)")
            #expect(result.stdout.contains("group finished"), "\(result.stdout)")
            #expect(try reports(in: directory).isEmpty)
        }
    }
#endif
