import BlackboxFormat
import BlackboxTestSupport
import Foundation
import Testing

@testable import Blackbox

/// A crash inside a `Task` names the async functions that awaited it (issue 19, item 2).
@Suite("Swift async callers in crash reports", .serialized)
struct AsyncCallerTests {
    @Test(
        "a crash two awaits deep in a Task names the awaiting caller as an [async] frame, on a named pool worker; also where seccomp refuses process_vm_readv",
        arguments: Build.allCases.filter { $0.binDirectory != nil }, [false, true])
    func asyncCaller(build: Build, refuseVMReadv: Bool) throws {
        let processed = try checkChain("async-task", build: build, refuseVMReadv: refuseVMReadv)
        // The physical frames go on after the async ones (the executor that ran the job).
        #expect(processed.frames.last?.asyncResume != true)
        #expect(processed.textRendering.contains("[async] "))
        #expect(
            processed.notes.contains { $0.contains("Swift concurrency cooperative-pool worker") }, "\(processed.notes)")
        #expect(processed.threads?.first?.frames == processed.frames)
    }

    @Test(
        "the awaiting caller is named in a task group's child and after a MainActor hop, debug and release, with process_vm_readv and without",
        arguments: ["async-group", "async-main-actor"], Build.allCases.filter { $0.binDirectory != nil })
    func otherKindsOfTasks(kind: String, build: Build) throws {
        for refuseVMReadv in [false, true] {
            try checkChain(kind, build: build, refuseVMReadv: refuseVMReadv)
        }
    }

    /// Crashes the child with `kind` and checks the chain: the callee is a physical frame, the
    /// awaiting caller an `[async]` frame after it.
    @discardableResult
    func checkChain(_ kind: String, build: Build, refuseVMReadv: Bool) throws -> CrashReport {
        let directory = TemporaryDirectory()
        let (result, report, outcome) = try crashAndProcess(
            kind, on: "main", build: build, directory: directory,
            environment: refuseVMReadv ? ["CRASH_CHILD_REFUSE_VM_READV": "1"] : [:])
        #expect(result.signaled && result.status == SIGSEGV, "\(result.stderr.suffix(300))")
        #expect(outcome.processed.count == 1)
        let processed = try #require(report)
        let names = processed.frames.map {
            ($0.asyncResume == true, $0.symbols.map(\.function).joined(separator: " / "))
        }
        let callee = try #require(
            processed.frames.firstIndex { $0.symbols.contains { $0.function.contains("awaitedCallee") } }, "\(names)")
        let caller = try #require(
            processed.frames.firstIndex { $0.symbols.contains { $0.function.contains("awaitingCaller") } }, "\(names)")
        #expect(caller > callee && processed.frames[caller].asyncResume == true, "\(names)")
        #expect(processed.frames[callee].asyncResume != true, "the callee is a physical frame")
        if kind == "async-main-actor" {
            #expect(
                processed.frames.contains {
                    $0.asyncResume == true && $0.symbols.contains { $0.function.contains("mainActorCaller") }
                }, "the main actor's caller is in the chain too: \(names)")
        }
        return processed
    }

    @Test("a crash outside async code has no [async] frames")
    func noAsyncCallers() throws {
        let directory = TemporaryDirectory()
        let (_, report, _) = try crashAndProcess("null-write", on: "thread", build: .debug, directory: directory)
        let processed = try #require(report)
        #expect(!processed.frames.contains { $0.asyncResume == true })
        #expect(!processed.notes.contains { $0.contains("cooperative-pool") })
    }
}
