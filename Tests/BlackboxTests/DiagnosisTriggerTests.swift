import BlackboxFormat
import BlackboxTestSupport
import Foundation
import Testing

@testable import Blackbox

/// The diagnoses the crash matrix does not reach, each from a real crash child in a debug and a
/// release build: memory faults told apart by what the signal handler records of the memory map at
/// crash time (`map` and `fault-access` lines, docs/crash-capture.md: the report's
/// `faultMemory`/`stackMemory`), a file mapping read past the file's end, and the Swift runtime's own
/// checks, which end in abort(), a C trap and an unmasked floating-point division, and a misaligned
/// read with the hardware's alignment check on. With the crash matrix's triggers, every kind
/// `CrashDiagnosis` names has a real crash behind it.
@Suite("Diagnosis: each kind the crash matrix lacks, from a real crash")
struct DiagnosisTriggerTests {
    struct Fault: Sendable, CustomTestStringConvertible {
        var trigger: String
        var place = "main"
        var signal: Int32 = SIGSEGV
        var code: Int32
        var diagnosis: CrashDiagnosis.Kind
        var summaryContains: String
        /// x86_64's page-fault error code, as the report says it; nil where there is none. Not checked
        /// for a stack overflow, whose first touch of the guard page may be a read or a write.
        var access: String?
        var checksAccess = true
        /// What must hold of the memory around the fault and the stack pointer.
        var memory: @Sendable (CrashReport.SignalDetails, _ executable: String) -> Bool = { _, _ in true }
        var testDescription: String { "\(trigger) on \(place)" }
    }

    static let faults: [Fault] = [
        Fault(
            trigger: "read-past-file-end", signal: SIGBUS, code: 2, diagnosis: .busError,
            summaryContains: "in r--s /memfd:bbx-cut-short (deleted): no memory behind a mapped address",
            access: "read",
            memory: { signal, _ in signal.faultMemory?.holding?.path == "/memfd:bbx-cut-short (deleted)" }),
        Fault(
            trigger: "trap", signal: SIGILL, code: 2, diagnosis: .illegalInstruction,
            summaryContains: "with no Swift runtime message", access: nil),
        Fault(
            trigger: "float-divide", signal: SIGFPE, code: 3, diagnosis: .arithmeticOverflow,
            summaryContains: "Floating-point exception (FPE_FLTDIV)", access: nil),
        Fault(
            trigger: "unowned-read", signal: SIGABRT, code: -6, diagnosis: .unownedReference,
            summaryContains: "Attempted to read an unowned reference", access: nil),
        Fault(
            trigger: "exclusivity", signal: SIGABRT, code: -6, diagnosis: .exclusivityViolation,
            summaryContains: "Exclusivity violation", access: nil),
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
                // malloc's chunk is in the main arena (`[heap]`) or, when the main thread's tcache
                // holds a chunk another thread freed there, in a thread arena: an anonymous mapping.
                signal.faultMemory?.holding.map {
                    $0.isWritable && !$0.isExecutable && ($0.path == "[heap]" || $0.path == nil)
                } == true
            }),
        Fault(
            trigger: "misaligned", signal: SIGBUS, code: 1, diagnosis: .misalignedAccess,
            summaryContains: "Misaligned access", access: nil,
            memory: { signal, _ in
                #if arch(x86_64)
                    // x86's alignment check gives no address (si_addr 0): nothing holds it.
                    signal.faultAddress == "0x0" && signal.faultMemory?.holding == nil
                        && signal.stackMemory?.holding?.path == "[stack]"
                #else
                    // The odd address is in the crash child's own writable data.
                    signal.faultMemory?.holding?.isWritable == true && signal.faultAddress.hasSuffix("1")
                #endif
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
        "each crash's report holds what the diagnosis needs, and the diagnosis names it", arguments: faults,
        CrashMatrixTests.debugAndRelease)
    func fault(_ fault: Fault, build: Build) throws {
        let executable = "\(try #require(build.binDirectory))/blackbox-crash-child"
        let directory = TemporaryDirectory()
        let (result, processed, _) = try crashAndProcess(
            fault.trigger, on: fault.place, build: build, directory: directory)
        #expect(result.signaled && result.status == fault.signal, "exit \(result.status)")
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
        // Written for the memory faults the kernel raises only: not for a trap, a floating-point
        // exception or a signal the process sent itself.
        if ![SIGSEGV, SIGBUS].contains(fault.signal) || fault.code <= 0 {
            #expect(signal.stackMemory == nil && signal.faultMemory == nil && signal.access == nil)
        } else if fault.trigger != "stack-overflow" {
            #expect(signal.stackMemory?.holding != nil, "\(String(describing: signal.stackMemory))")
        }
        #expect(!report.partial, "\(report.notes)")
        #expect(report.textRendering.contains("Fault Memory:") == (signal.faultMemory != nil))
    }
}
