import BlackboxFormat
import Foundation
import Testing

/// `CrashDiagnosis` beyond what the crash matrix's real crashes cover (CrashMatrixTests checks every
/// trigger there): each rule on a report built by hand.
@Suite("Crash diagnosis from a report's signal, fault address, registers and frames")
struct CrashDiagnosisTests {
    struct Case: Sendable, CustomTestStringConvertible {
        var name: String
        var signal: Int32
        var code: Int32
        var fault = "0x0"
        var sender: Int32? = nil
        var stackPointer = "0x7ffd00000000"
        var pc = "0x55550000a000"
        var fatalMessage: String? = nil
        var runtimeFailure: String? = nil
        var recursion = false
        var expected: CrashDiagnosis.Kind?
        var summaryContains = ""
        var testDescription: String { name }
    }

    static let cases: [Case] = [
        Case(
            name: "null read past nil", signal: 11, code: 1, fault: "0x18", expected: .nullDereference,
            summaryContains: "24 bytes past nil"),
        Case(
            name: "stack pointer in the guard page", signal: 11, code: 2, fault: "0x7ffcffffeff8",
            expected: .stackOverflow),
        Case(
            name: "deep recursion cut", signal: 11, code: 1, fault: "0x1234560", recursion: true,
            expected: .stackOverflow, summaryContains: "recurse(_:), which calls itself"),
        Case(name: "write to read-only data", signal: 11, code: 2, fault: "0x555500001000", expected: .protectedMemory),
        Case(
            name: "jump into the heap", signal: 11, code: 2, fault: "0x5555deadb000", pc: "0x5555deadb000",
            expected: .nonExecutableJump),
        Case(
            name: "bad function pointer", signal: 11, code: 1, fault: "0x4141414141", pc: "0x4141414141",
            expected: .nonExecutableJump, summaryContains: "bad function pointer"),
        Case(name: "wild pointer", signal: 11, code: 1, fault: "0xdead0000beef", expected: .wildPointer),
        Case(name: "misaligned", signal: 7, code: 1, fault: "0x1001", expected: .misalignedAccess),
        Case(name: "truncated mapping", signal: 7, code: 2, fault: "0x7f0000001000", expected: .busError),
        Case(
            name: "kill -SEGV from another process", signal: 11, code: 0, sender: 4242, expected: .externalSignal,
            summaryContains: "process 4242"),
        Case(name: "raise(SIGSEGV)", signal: 11, code: -6, sender: 100, expected: .raised),
        Case(
            name: "abort with a message", signal: 6, code: -6, sender: 100, fatalMessage: "Fatal error: boom",
            expected: .abort, summaryContains: "boom"),
        Case(
            name: "exclusivity", signal: 5, code: 1,
            runtimeFailure: "Simultaneous accesses to 0x1, but modification requires exclusive access",
            expected: .exclusivityViolation),
        Case(
            name: "unowned", signal: 4, code: 2,
            fatalMessage: "Fatal error: Attempted to read an unowned reference but the object was already deallocated",
            expected: .unownedReference),
        Case(
            name: "precondition", signal: 4, code: 2,
            fatalMessage: "Fatal error: amount must be positive: file Shop/Pay.swift, line 12", expected: .fatalError,
            summaryContains: "amount must be positive"),
        Case(
            name: "release overflow", signal: 4, code: 2, runtimeFailure: "arithmetic overflow",
            expected: .arithmeticOverflow),
        Case(name: "ud2 with no text", signal: 4, code: 2, expected: .illegalInstruction),
        Case(name: "FPE integer overflow", signal: 8, code: 2, expected: .arithmeticOverflow),
    ]

    @Test("each rule", arguments: cases)
    func rule(_ item: Case) {
        var report = CrashReport(
            kind: .crash, app: .init(name: "shop"),
            host: .init(name: "h", os: "Linux", kernel: "6", architecture: "x86_64"),
            process: .init(pid: 100, path: "/srv/shop", crashTime: Date(timeIntervalSince1970: 0)),
            thread: .init(id: 100, name: "main"))
        report.signal = .init(
            number: item.signal, name: "SIG\(item.signal)", code: item.code, codeName: nil, faultAddress: item.fault,
            senderPID: item.sender)
        report.registers = [.init(name: "rip", value: item.pc), .init(name: "rsp", value: item.stackPointer)]
        report.fatalMessage = item.fatalMessage
        let top =
            item.runtimeFailure.map { [CrashReport.Symbol(function: "Swift runtime failure: \($0)", inlined: true)] }
            ?? []
        report.frames = (0..<(item.recursion ? 130 : 3)).map { index in
            .init(
                index: index, address: index == 0 ? item.pc : "0x55550000\(1000 + index)", imageIndex: 0,
                imageOffset: "0x\(1000 + index)",
                symbols: (index == 0 ? top : []) + [.init(function: item.recursion ? "recurse(_:)" : "f\(index)()")])
        }
        if item.recursion { report.omittedFrames = .init(omittedAfterIndex: 100, count: 39_000) }
        let diagnosis = report.diagnosis
        #expect(diagnosis?.kind == item.expected, "\(diagnosis?.summary ?? "none")")
        if !item.summaryContains.isEmpty {
            #expect(diagnosis?.summary.contains(item.summaryContains) == true, "\(diagnosis?.summary ?? "none")")
        }
    }

    @Test("no signal, no diagnosis: non-fatal reports, hangs and unseen deaths")
    func noSignal() {
        let report = CrashReport(
            kind: .nonfatal, app: .init(name: "shop"),
            host: .init(name: "h", os: "Linux", kernel: "6", architecture: "x86_64"),
            process: .init(pid: 1, path: nil, crashTime: Date(timeIntervalSince1970: 0)),
            thread: .init(id: 1, name: nil))
        #expect(report.diagnosis == nil)
        #expect(!report.textRendering.contains("Diagnosis:"))
    }
}
