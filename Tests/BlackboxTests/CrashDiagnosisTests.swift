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
        var access: String? = nil
        var faultMemory: CrashReport.MemoryNeighbourhood? = nil
        var stackMemory: CrashReport.MemoryNeighbourhood? = nil
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
        // With the memory map at crash time (the handler's `map` lines).
        Case(
            name: "a large frame jumps onto the guard page below a thread's stack", signal: 11, code: 2,
            fault: "0x7f0000000800", stackPointer: "0x7f0000200000",
            faultMemory: .init(holding: threadGuard, below: heap, above: threadStack),
            stackMemory: .init(holding: threadStack, below: threadGuard), expected: .stackOverflow),
        Case(
            name: "a guard page that is not the crashed thread's stack", signal: 11, code: 2, fault: "0x7f0000000800",
            stackPointer: "0x7ffd00000000", faultMemory: .init(holding: threadGuard, above: threadStack),
            stackMemory: .init(holding: mainStack), expected: .protectedMemory, summaryContains: "guard page"),
        Case(
            name: "write to the binary's read-only data", signal: 11, code: 2, fault: "0x555500001010", access: "write",
            faultMemory: .init(
                holding: .init(start: "0x555500001000", end: "0x555500002000", permissions: "r--p", path: "/srv/shop")),
            expected: .protectedMemory, summaryContains: "Write to read-only memory at 0x555500001010 (r--p /srv/shop)"),
        Case(
            name: "a call into the heap", signal: 11, code: 2, fault: "0x555600000040", pc: "0x555600000040",
            access: "execute", faultMemory: .init(holding: heap), expected: .nonExecutableJump,
            summaryContains: "(rw-p [heap])"),
        Case(
            name: "just past the heap's end", signal: 11, code: 1, fault: "0x555600021010",
            faultMemory: .init(below: heap, above: threadGuard), expected: .wildPointer,
            summaryContains: "nothing is mapped at 0x555600021010, 16 bytes past the end of rw-p [heap]"),
        Case(
            name: "in the gap below the main thread's stack", signal: 11, code: 1, fault: "0x7ffcfff00000",
            stackPointer: "0x7ffd00100000", faultMemory: .init(below: threadStack, above: mainStack),
            stackMemory: .init(holding: mainStack), expected: .stackOverflow),
        Case(
            name: "far from everything", signal: 11, code: 1, fault: "0x300000000000",
            faultMemory: .init(below: heap, above: threadGuard), expected: .wildPointer,
            summaryContains: "nothing is mapped at 0x300000000000"),
        Case(
            name: "a non-canonical pointer (general protection, no address)", signal: 11, code: 128,
            expected: .wildPointer, summaryContains: "outside the address space"),
        Case(name: "misaligned", signal: 7, code: 1, fault: "0x1001", expected: .misalignedAccess),
        Case(name: "misaligned, x86's alignment check", signal: 7, code: 1, fault: "0x0", expected: .misalignedAccess),
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

    static let heap = CrashReport.MemoryMapping(
        start: "0x555600000000", end: "0x555600021000", permissions: "rw-p", path: "[heap]")
    static let threadGuard = CrashReport.MemoryMapping(
        start: "0x7f0000000000", end: "0x7f0000001000", permissions: "---p")
    static let threadStack = CrashReport.MemoryMapping(
        start: "0x7f0000001000", end: "0x7f0000801000", permissions: "rw-p")
    static let mainStack = CrashReport.MemoryMapping(
        start: "0x7ffd00000000", end: "0x7ffd00200000", permissions: "rw-p", path: "[stack]")

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
        report.signal?.access = item.access
        report.signal?.faultMemory = item.faultMemory
        report.signal?.stackMemory = item.stackMemory
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

    @Test("the handler's map lines become the report's memory neighbourhoods, and its text says where the fault was")
    func mapLines() throws {
        let raw = """
            blackbox-raw-crash 2
            app shop
            signal 11 SIGSEGV
            code 2
            address 0x555600021010
            register rsp 0x7ffd00100000
            fault-access write
            map stack-below 7ffcfffff000-7ffd00000000 ---p 00000000 00:00 0
            map stack 7ffd00000000-7ffd00200000 rw-p 00000000 00:00 0                          [stack]
            map stack-above 7ffd00200000-7ffd00204000 r--p 00000000 00:00 0                          [vvar]
            map fault-below 555600000000-555600021000 rw-p 00000000 00:00 0                          [heap]
            map fault-above 7f1200000000-7f1200001000 r--p 00000000 08:01 42                         /tmp/a file (deleted)
            map fault-sideways 0-1000 r--p
            map fault not a maps line
            fault-access sideways
            end

            """
        let report = CrashReportAssembler().assemble(try RawCrashReport(bytes: Array(raw.utf8)))
        let signal = try #require(report.signal)
        #expect(signal.access == "write")
        #expect(
            signal.faultMemory
                == .init(
                    below: Self.heap,
                    above: .init(
                        start: "0x7f1200000000", end: "0x7f1200001000", permissions: "r--p",
                        path: "/tmp/a file (deleted)")))
        #expect(signal.stackMemory?.holding == Self.mainStack)
        #expect(signal.stackMemory?.below?.isInaccessible == true)
        #expect(signal.stackMemory?.above?.path == "[vvar]")
        #expect(
            report.diagnosis?.summary
                == "Bad pointer: nothing is mapped at 0x555600021010, 16 bytes past the end of rw-p [heap]")
        let text = report.textRendering
        #expect(text.contains("Fault Address:    0x555600021010 (write)"), "\(text)")
        #expect(text.contains("Fault Memory:     in no mapping, after rw-p [heap] (ends 0x555600021000)"), "\(text)")
        #expect(text.contains("Stack Memory:     in rw-p [stack] 0x7ffd00000000-0x7ffd00200000"), "\(text)")

        // A report of JSON without the new fields (an older client's) still decodes, with none.
        var old = report
        old.signal?.faultMemory = nil
        old.signal?.stackMemory = nil
        old.signal?.access = nil
        let decoded = try JSONDecoder().decode(CrashReport.self, from: try JSONEncoder().encode(old))
        #expect(decoded.signal?.faultMemory == nil && decoded.signal == old.signal)
        #expect(try JSONDecoder().decode(CrashReport.self, from: try JSONEncoder().encode(report)) == report)
    }
}
