/// What a crash most likely was, in one line, read from what every report already carries: the signal
/// and its code, the fault address, the stack pointer, the frames and the Swift runtime's message. The
/// kinds follow Datadog's crash tracker (libdatadog RFC 0014: null dereference, stack overflow, write
/// to protected memory, execution of non-executable memory, misaligned access, a wild pointer) and add
/// Swift's own traps by their check. A pure function of the report: the CLI's text, the collector's
/// page and its API compute it the same way.
///
/// Rules (x86_64 and aarch64 Linux), first match wins:
/// 1. A Swift trap (SIGILL or SIGTRAP) with the runtime's text (the `Swift runtime failure: …` frame of
///    a release build, or the fatal message) is named by its check.
///    SIGABRT with the runtime's message is named the same way where the text names a check: the
///    runtime's own checks (an unowned reference to a freed object, an access conflict) abort.
/// 2. A signal another process sent (si_code ≤ 0 with a sender other than the process) is that; one
///    the process sent itself is `abort()` for SIGABRT, "raised" otherwise.
/// 3. SIGSEGV: a fault within 64 KiB of the stack pointer, a recursion deep enough that frames were
///    omitted, or (by the memory map at crash time) a fault on the guard page below the thread's stack
///    or in the gap below the main thread's, is a stack overflow (named after the function that
///    repeats most); a general-protection fault is a pointer outside the address space; a fault below
///    4 KiB is a null dereference (the address is the offset from nil); an instruction fetch (or a
///    fault at the faulting instruction itself) is a jump into memory that is not executable, or not
///    mapped; a fault inside a mapping is protected memory (a guard page, a write to read-only memory,
///    named with the mapping); one in no mapping a wild pointer (with the nearest mapping within
///    64 KiB). Without a memory map (older reports), SEGV_ACCERR is protected memory and SEGV_MAPERR a
///    wild pointer.
/// 4. SIGBUS by its code, SIGFPE by its code, SIGABRT, and a trap with no Swift text.
public struct CrashDiagnosis: Codable, Sendable, Equatable {
    public enum Kind: String, Codable, Sendable, CaseIterable {
        case nilUnwrap = "nil-unwrap"
        case indexOutOfRange = "index-out-of-range"
        case arithmeticOverflow = "arithmetic-overflow"
        case divisionByZero = "division-by-zero"
        case exclusivityViolation = "exclusivity-violation"
        case unownedReference = "unowned-reference"
        case fatalError = "fatal-error"
        case swiftRuntimeFailure = "swift-runtime-failure"
        case nullDereference = "null-dereference"
        case stackOverflow = "stack-overflow"
        case nonExecutableJump = "non-executable-jump"
        case protectedMemory = "protected-memory"
        case wildPointer = "wild-pointer"
        case misalignedAccess = "misaligned-access"
        case busError = "bus-error"
        case abort
        case raised
        case externalSignal = "external-signal"
        case illegalInstruction = "illegal-instruction"
    }

    public var kind: Kind
    /// One line for people: `Force-unwrap of nil`, `Null pointer dereference: 0x10, 16 bytes past nil`…
    public var summary: String

    public init(kind: Kind, summary: String) {
        self.kind = kind
        self.summary = summary
    }

    /// Nil for a report of no signal (non-fatal reports, hangs, unseen deaths) or one no rule fits.
    public init?(_ report: CrashReport) {
        guard let signal = report.signal else { return nil }
        let fault = address(fromHex: signal.faultAddress)
        if signal.number == Signal.ill || signal.number == Signal.trap, let trap = Self.swiftTrap(report) {
            self = trap
        } else if signal.number == Signal.abrt, signal.senderPID.map({ $0 == report.process.pid }) ?? true,
            let check = Self.swiftTrap(report), check.kind != .fatalError, check.kind != .swiftRuntimeFailure
        {
            // The runtime's own checks (an unowned reference, an access conflict) end in abort().
            self = check
        } else if signal.code <= 0 {
            self = Self.sent(signal, by: report)
        } else {
            switch signal.number {
            case Signal.segv: self = Self.segmentationFault(signal, fault: fault, report: report)
            case Signal.bus:
                switch signal.code {
                case 1:
                    // x86's alignment check (EFLAGS.AC) reports no address.
                    let place = fault == 0 ? " (the processor gave no address)" : " at \(signal.faultAddress)"
                    self.init(kind: .misalignedAccess, summary: "Misaligned access\(place)")
                case 2:
                    let place = signal.faultMemory?.holding.map { " in \($0.shortDescription)" } ?? ""
                    self.init(
                        kind: .busError,
                        summary:
                            "Bus error at \(signal.faultAddress)\(place): no memory behind a mapped address (a mapped file cut short?)"
                    )
                default: self.init(kind: .busError, summary: "Bus error at \(signal.faultAddress)")
                }
            case Signal.fpe:
                switch signal.code {
                case 1: self.init(kind: .divisionByZero, summary: "Integer division by zero")
                case 2: self.init(kind: .arithmeticOverflow, summary: "Integer overflow in a division")
                default:
                    self.init(
                        kind: .arithmeticOverflow,
                        summary: "Floating-point exception (\(signal.codeName ?? "code \(signal.code)"))")
                }
            case Signal.abrt: self.init(kind: .abort, summary: Self.abortSummary(report))
            case Signal.ill, Signal.trap:
                self.init(
                    kind: .illegalInstruction,
                    summary: "A trap instruction (\(signal.name)) with no Swift runtime message")
            default: return nil
            }
        }
    }

    // MARK: Rules

    private static func swiftTrap(_ report: CrashReport) -> CrashDiagnosis? {
        let failure = report.frames.prefix(3).lazy.flatMap(\.symbols).first {
            $0.function.hasPrefix("Swift runtime failure: ")
        }.map { String($0.function.dropFirst("Swift runtime failure: ".count)) }
        let message = report.fatalMessage.map { String($0.split(separator: "\n").first ?? "") }
        guard let text = failure ?? message, !text.isEmpty else { return nil }
        let lowered = text.lowercased()
        if lowered.contains("unexpectedly found nil") {
            return CrashDiagnosis(kind: .nilUnwrap, summary: "Force-unwrap of nil: \(text)")
        }
        if lowered.contains("index out of range") {
            return CrashDiagnosis(kind: .indexOutOfRange, summary: "Index out of range")
        }
        if lowered.contains("division by zero") {
            return CrashDiagnosis(kind: .divisionByZero, summary: "Integer division by zero")
        }
        if lowered.contains("overflow") {
            return CrashDiagnosis(kind: .arithmeticOverflow, summary: "Arithmetic overflow: \(text)")
        }
        // The runtime prints "Simultaneous accesses to …" on stderr; its message buffer keeps
        // "Fatal access conflict detected."
        if lowered.contains("simultaneous accesses") || lowered.contains("access conflict") {
            return CrashDiagnosis(kind: .exclusivityViolation, summary: "Exclusivity violation: \(text)")
        }
        if lowered.contains("unowned") {
            return CrashDiagnosis(kind: .unownedReference, summary: "Unowned reference to a freed object: \(text)")
        }
        if let message, failure == nil {
            return CrashDiagnosis(kind: .fatalError, summary: message)
        }
        return CrashDiagnosis(kind: .swiftRuntimeFailure, summary: "Swift runtime failure: \(text)")
    }

    private static func sent(_ signal: CrashReport.SignalDetails, by report: CrashReport) -> CrashDiagnosis {
        if let sender = signal.senderPID, sender != report.process.pid {
            return CrashDiagnosis(
                kind: .externalSignal, summary: "\(signal.name) sent by process \(sender) (kill), not a fault")
        }
        if signal.number == Signal.abrt { return CrashDiagnosis(kind: .abort, summary: abortSummary(report)) }
        return CrashDiagnosis(
            kind: .raised, summary: "\(signal.name) raised by the process itself (raise, pthread_kill), not a fault")
    }

    private static func abortSummary(_ report: CrashReport) -> String {
        if let message = report.fatalMessage?.split(separator: "\n").first { return "abort(): \(message)" }
        return "abort() called"
    }

    private static func segmentationFault(_ signal: CrashReport.SignalDetails, fault: UInt64?, report: CrashReport)
        -> CrashDiagnosis
    {
        if isStackOverflow(signal, fault: fault, report: report) {
            let recursion = repeatingFunction(report.frames).map { " in \($0), which calls itself" } ?? ""
            return CrashDiagnosis(kind: .stackOverflow, summary: "Stack overflow\(recursion)")
        }
        // SI_KERNEL: a general-protection fault, which x86_64 raises for an address outside the
        // canonical range (a pointer of garbage) and reports without the address.
        if signal.code == 128 {
            return CrashDiagnosis(
                kind: .wildPointer,
                summary: "Bad pointer: an address outside the address space (the processor does not say which)")
        }
        guard let fault else { return CrashDiagnosis(kind: .wildPointer, summary: "Bad memory access") }
        if fault < 4096 {
            return CrashDiagnosis(
                kind: .nullDereference,
                summary: fault == 0
                    ? "Null pointer dereference"
                    : "Null pointer dereference: \(signal.faultAddress), \(fault) bytes past nil")
        }
        let memory = signal.faultMemory
        let pc = report.frames.first.flatMap { address(fromHex: $0.address) }
        if signal.access == "execute" || pc == fault {
            if let mapping = memory?.holding {
                return CrashDiagnosis(
                    kind: .nonExecutableJump,
                    summary:
                        "Jump into memory that is not executable at \(signal.faultAddress) (\(mapping.shortDescription))"
                )
            }
            return CrashDiagnosis(
                kind: .nonExecutableJump,
                summary: signal.code == 2 && memory == nil
                    ? "Jump into memory that is not executable at \(signal.faultAddress)"
                    : "Jump to an address nothing is mapped at: \(signal.faultAddress) (a bad function pointer?)")
        }
        if let mapping = memory?.holding {
            let place = "\(signal.faultAddress) (\(mapping.shortDescription))"
            let summary =
                if mapping.isInaccessible {
                    "Access to a guard page at \(place): memory nothing may touch, past the end of a buffer or a stack"
                } else if signal.access == "write", !mapping.isWritable {
                    "Write to read-only memory at \(place)"
                } else {
                    "Access to protected memory at \(place)"
                }
            return CrashDiagnosis(kind: .protectedMemory, summary: summary)
        }
        if let memory {
            return CrashDiagnosis(
                kind: .wildPointer,
                summary: "Bad pointer: nothing is mapped at \(signal.faultAddress)\(nearest(fault, memory))")
        }
        if signal.code == 2 {
            return CrashDiagnosis(
                kind: .protectedMemory,
                summary:
                    "Access to protected memory at \(signal.faultAddress) (a write to read-only data, or a guard page)")
        }
        return CrashDiagnosis(kind: .wildPointer, summary: "Bad pointer: nothing is mapped at \(signal.faultAddress)")
    }

    /// A fault within 64 KiB of the stack pointer, frames omitted from a deep recursion, or what the
    /// memory map shows: the fault (or the stack pointer itself) on the guard page below the thread's
    /// stack, or in the gap the kernel keeps below the main thread's growable `[stack]`.
    private static func isStackOverflow(_ signal: CrashReport.SignalDetails, fault: UInt64?, report: CrashReport)
        -> Bool
    {
        if (report.omittedFrames?.count ?? 0) > 0 { return true }
        let stackPointer = report.registers.first { $0.name == "rsp" || $0.name == "sp" }.flatMap {
            address(fromHex: $0.value)
        }
        if let fault, let stackPointer, fault &+ 65_536 >= stackPointer, fault <= stackPointer &+ 65_536 {
            return true
        }
        if signal.stackMemory?.holding?.isInaccessible == true { return true }
        guard let fault, let memory = signal.faultMemory, let above = memory.above else { return false }
        if let guardPage = memory.holding {
            return guardPage.isInaccessible && guardPage.endAddress == above.startAddress
                && signal.stackMemory?.holding == above
        }
        // Linux keeps 256 pages (1 MiB with 4 KiB pages) unmapped below a growable stack.
        return above.path == "[stack]" && above.startAddress &- fault <= (1 << 20) + 65_536
    }

    /// `, 16 bytes past the end of rw-p [heap]` when a mapping is within 64 KiB of the address.
    private static func nearest(_ fault: UInt64, _ memory: CrashReport.MemoryNeighbourhood) -> String {
        let past = memory.below.map { (distance: fault &- $0.endAddress, mapping: $0) }
        let before = memory.above.map { (distance: $0.startAddress &- fault, mapping: $0) }
        if let past, past.distance < 65_536, past.distance <= before?.distance ?? .max {
            let howFar = past.distance == 0 ? "just" : "\(past.distance) bytes"
            return ", \(howFar) past the end of \(past.mapping.shortDescription)"
        }
        if let before, before.distance < 65_536 {
            return ", \(before.distance) bytes before \(before.mapping.shortDescription)"
        }
        return ""
    }

    /// The function that appears most often among the crashed thread's frames, when it repeats.
    private static func repeatingFunction(_ frames: [CrashReport.Frame]) -> String? {
        var counts: [String: Int] = [:]
        for frame in frames {
            guard let function = frame.symbols.last?.function else { continue }
            counts[function, default: 0] += 1
        }
        guard let (function, count) = counts.max(by: { $0.value < $1.value }), count >= 3 else { return nil }
        return function
    }

    /// Linux's numbers for the signals the rules read (the same on x86_64 and aarch64).
    private enum Signal {
        static let ill: Int32 = 4
        static let trap: Int32 = 5
        static let abrt: Int32 = 6
        static let bus: Int32 = 7
        static let fpe: Int32 = 8
        static let segv: Int32 = 11
    }
}

extension CrashReport {
    /// What the crash most likely was (`CrashDiagnosis`); nil when the report has no signal.
    public var diagnosis: CrashDiagnosis? { CrashDiagnosis(self) }
}
