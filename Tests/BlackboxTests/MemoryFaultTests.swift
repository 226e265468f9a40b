import BlackboxFormat
import BlackboxTestSupport
import Foundation
import Testing

@testable import Blackbox

/// Memory faults a real crash child makes, told apart by what the signal handler records of the
/// memory map at crash time (`map` and `fault-access` lines, docs/crash-capture.md): the report's
/// `faultMemory`/`stackMemory` and the diagnosis built on them, in a debug and a release build.
@Suite("Memory faults: the memory map at crash time says what was touched")
struct MemoryFaultTests {
    struct Fault: Sendable, CustomTestStringConvertible {
        var trigger: String
        var place = "main"
        var code: Int32
        var diagnosis: CrashDiagnosis.Kind
        var summaryContains: String
        /// x86_64's page-fault error code, as the report says it; nil where there is none. Not checked
        /// for a stack overflow, whose first touch of the guard page may be a read or a write.
        var access: String?
        var checksAccess = true
        /// What must hold of the memory around the fault and the stack pointer.
        var memory: @Sendable (CrashReport.SignalDetails, _ executable: String) -> Bool
        var testDescription: String { "\(trigger) on \(place)" }
    }

    static let faults: [Fault] = [
        Fault(
            trigger: "read-only-write", code: 2, diagnosis: .protectedMemory,
            summaryContains: "Write to read-only memory", access: "write",
            memory: { signal, executable in
                signal.faultMemory?.holding?.permissions == "r-xp" && signal.faultMemory?.holding?.path == executable
            }),
        Fault(
            trigger: "execute-heap", code: 2, diagnosis: .nonExecutableJump,
            summaryContains: "Jump into memory that is not executable", access: "execute",
            memory: { signal, _ in
                signal.faultMemory?.holding.map { $0.isWritable && !$0.isExecutable && $0.path == "[heap]" } == true
            }),
        Fault(
            trigger: "read-unmapped", code: 1, diagnosis: .wildPointer, summaryContains: "nothing is mapped at",
            access: "read",
            memory: { signal, _ in
                signal.faultMemory != nil && signal.faultMemory?.holding == nil
            }),
        Fault(
            trigger: "non-canonical-write", code: 128, diagnosis: .wildPointer,
            summaryContains: "outside the address space", access: nil,
            memory: { signal, _ in
                // A general-protection fault has no address: the stack's map only.
                signal.faultMemory == nil && signal.stackMemory?.holding?.path == "[stack]"
            }),
        Fault(
            trigger: "stack-overflow", place: "thread", code: 2, diagnosis: .stackOverflow,
            summaryContains: "Stack overflow", access: nil, checksAccess: false,
            memory: { signal, _ in
                // The fault is on the guard page glibc keeps below a thread's stack.
                signal.faultMemory?.holding?.isInaccessible == true
            }),
        Fault(
            trigger: "stack-overflow", place: "main", code: 1, diagnosis: .stackOverflow,
            summaryContains: "Stack overflow", access: nil, checksAccess: false,
            memory: { signal, _ in
                // Below the main thread's growable stack, where it may not grow any further.
                signal.faultMemory?.holding == nil && signal.faultMemory?.above?.path == "[stack]"
            }),
    ]

    @Test(
        "each fault's report holds its map and the diagnosis names it", arguments: faults,
        CrashMatrixTests.debugAndRelease)
    func fault(_ fault: Fault, build: Build) throws {
        let executable = "\(try #require(build.binDirectory))/blackbox-crash-child"
        let directory = TemporaryDirectory()
        let (result, processed, _) = try crashAndProcess(
            fault.trigger, on: fault.place, build: build, directory: directory)
        #expect(result.signaled && result.status == SIGSEGV, "exit \(result.status)")
        let report = try #require(processed, "no report")
        let signal = try #require(report.signal)
        #expect(signal.code == fault.code)
        #expect(report.diagnosis?.kind == fault.diagnosis, "\(report.diagnosis?.summary ?? "none")")
        #expect(
            report.diagnosis?.summary.contains(fault.summaryContains) == true, "\(report.diagnosis?.summary ?? "none")")
        #if arch(x86_64)
            if fault.checksAccess { #expect(signal.access == fault.access) }
        #endif
        #expect(
            fault.memory(signal, executable),
            "fault: \(String(describing: signal.faultMemory)); stack: \(String(describing: signal.stackMemory))")
        #expect(
            signal.stackMemory?.holding != nil || fault.trigger == "stack-overflow",
            "\(String(describing: signal.stackMemory))")
        #expect(!report.partial, "\(report.notes)")
        #expect(report.textRendering.contains("Fault Memory:") == (signal.faultMemory != nil))
    }
}
