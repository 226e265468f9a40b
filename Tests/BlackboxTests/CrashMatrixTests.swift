import BlackboxFormat
import BlackboxTestSupport
import Foundation
import Testing

@testable import Blackbox

/// One way to crash and what its report must say (DESIGN.md's crash matrix).
struct CrashCase: Sendable, CustomTestStringConvertible {
    enum FrameExpectation: Sendable {
        /// Frame 0 itself is this function (C crashes: the faulting instruction is ours).
        case frameZero(String)
        /// The first frame inside the crashing binary is this function (frame 0 may be in the Swift
        /// runtime or libc, e.g. `_assertionFailure`, `pthread_kill`).
        case firstInApp(String)
        /// One of the first frames inside the crashing binary is this function: a stack overflow faults
        /// wherever the guard page is hit, possibly in a stdlib generic specialized into the binary
        /// (`withUnsafeMutableBytes`) that the recursion calls.
        case withinFirstInApp(String, frames: Int)
        case none
    }
    enum MessageExpectation: Sendable {
        case always(String)
        case debugOnly(String)
        case none
    }

    var kind: String
    var signal: Int32
    var code: Int32
    var frame: FrameExpectation
    /// What `CrashDiagnosis` must call it, in every build and place.
    var diagnosis: CrashDiagnosis.Kind
    var message: MessageExpectation = .none
    /// Release builds name the trap's innermost inlined frame `Swift runtime failure: <reason>`.
    var releaseReason: String? = nil
    var places = ["main", "thread", "dispatch"]

    var testDescription: String { kind }

    static let all: [CrashCase] = [
        CrashCase(
            kind: "fatal-error", signal: SIGILL, code: 2, frame: .firstInApp("triggerFatalError"),
            diagnosis: .fatalError,
            message: .always("crash-child fatal error")),
        CrashCase(
            kind: "index", signal: SIGILL, code: 2, frame: .firstInApp("triggerIndexOutOfRange"),
            diagnosis: .indexOutOfRange,
            message: .debugOnly("Index out of range"), releaseReason: "Swift runtime failure: Index out of range"),
        CrashCase(
            kind: "nil-unwrap", signal: SIGILL, code: 2, frame: .firstInApp("triggerNilUnwrap"), diagnosis: .nilUnwrap,
            message: .debugOnly("Unexpectedly found nil"),
            releaseReason: "Swift runtime failure: Unexpectedly found nil while unwrapping an Optional value"),
        CrashCase(
            kind: "overflow", signal: SIGILL, code: 2, frame: .firstInApp("triggerOverflow"),
            diagnosis: .arithmeticOverflow,
            releaseReason: "Swift runtime failure: arithmetic overflow"),
        CrashCase(
            kind: "null-write", signal: SIGSEGV, code: 1, frame: .frameZero("bbx_test_null_write"),
            diagnosis: .nullDereference),
        CrashCase(
            kind: "divide-by-zero", signal: SIGFPE, code: 1, frame: .frameZero("bbx_test_divide"),
            diagnosis: .divisionByZero),
        CrashCase(kind: "abort", signal: SIGABRT, code: -6, frame: .firstInApp("triggerAbort"), diagnosis: .abort),
        CrashCase(kind: "sigbus", signal: SIGBUS, code: -6, frame: .firstInApp("triggerSigbus"), diagnosis: .raised),
        // A stack overflow needs an alternate signal stack on the crashing thread: the main thread,
        // threads given one with `CrashCapture.prepareCurrentThread()`, every thread started after
        // `Blackbox.start` (from its first instant: new-*, where the sweep is off), and every other
        // thread once Blackbox's sweep reached it (Dispatch and Swift-concurrency workers, an app's own).
        CrashCase(
            kind: "stack-overflow", signal: SIGSEGV, code: -1,
            frame: .withinFirstInApp("triggerStackOverflow", frames: 4), diagnosis: .stackOverflow,
            places: ["main", "thread", "dispatch", "task", "plain-thread", "new-task", "new-dispatch", "new-thread"]),
    ]
}

enum Build: String, Sendable, CaseIterable {
    case debug, release

    var binDirectory: String? {
        switch self {
        case .debug: ProcessInfo.processInfo.environment["BLACKBOX_TEST_BIN"]
        case .release: ProcessInfo.processInfo.environment["BLACKBOX_TEST_RELEASE_BIN"]
        }
    }
}

/// Runs the crash child and returns the one processed report (and the child's result).
func crashAndProcess(
    _ kind: String, on place: String, build: Build, swiftBacktrace: Bool = false, directory: TemporaryDirectory,
    environment extra: [String: String] = [:]
) throws -> (ChildResult, CrashReport?, CrashReportProcessor.Outcome) {
    let executable = "\(build.binDirectory ?? "")/blackbox-crash-child"
    var environment = extra
    environment["SWIFT_BACKTRACE"] = swiftBacktrace ? "enable=yes,interactive=no,color=no" : "enable=no"
    // Blackbox skips the runtime's backtracer after its own report unless asked to chain.
    if swiftBacktrace { environment["BLACKBOX_SWIFT_BACKTRACER"] = "always" }
    let result = try runProgram(executable, [directory.path, kind, place], environment: environment)
    let outcome = CrashReportProcessor(directory: directory.path).processPending()
    return (result, outcome.processed.first?.report, outcome)
}

/// The build-id `readelf -n` prints for a binary.
func readelfBuildID(_ path: String) throws -> String? {
    let result = try runProgram("/usr/bin/readelf", ["-n", path])
    guard let line = result.stdout.split(separator: "\n").first(where: { $0.contains("Build ID:") }) else { return nil }
    return line.split(separator: " ").last.map(String.init)
}

func check(_ report: CrashReport, _ crash: CrashCase, place: String, build: Build, executable: String) throws {
    #expect(report.kind == .crash)
    #expect(report.signal?.number == crash.signal)
    #expect(report.diagnosis?.kind == crash.diagnosis, "\(report.diagnosis?.summary ?? "no diagnosis")")
    #expect(report.textRendering.hasPrefix("Diagnosis:"), "the text's first line")
    if crash.kind == "stack-overflow" {
        // SEGV_MAPERR on the main thread's growable stack, SEGV_ACCERR on a thread's guard page.
        #expect([1, 2].contains(report.signal?.code ?? 0))
    } else {
        #expect(report.signal?.code == crash.code)
    }
    #expect(report.app == CrashReport.App(name: "crash-child", version: "1.0", build: "42"))
    #expect(report.metadata["test"] == "crash-matrix")
    #expect(report.symbolicated, "notes: \(report.notes)")
    #expect(!report.partial, "notes: \(report.notes)")
    #expect(report.frames.count >= 3)
    #expect(report.registers.contains { $0.name == "rip" || $0.name == "pc" })
    #expect(report.logTail.contains { $0.contains("about to crash: \(crash.kind) on \(place)") }, "\(report.logTail)")
    if place != "main" { #expect(report.thread.id != report.process.pid) }

    // Build-ids: the executable's entry must be exactly what readelf reads from the file.
    let image = try #require(report.images.first { $0.path == executable })
    #expect(image.buildID != nil)
    #expect(image.buildID == (try readelfBuildID(executable)))
    #expect(image.buildIDMatches == true)

    let appImage = report.images.firstIndex { $0.path == executable }
    switch crash.frame {
    case .frameZero(let name):
        #expect(report.frames.first?.symbols.contains { $0.function.contains(name) } == true, "\(report.frames.first!)")
    case .firstInApp(let name):
        let first = try #require(report.frames.first { $0.imageIndex == appImage })
        #expect(first.symbols.contains { $0.function.contains(name) }, "\(first)")
        #expect(report.frames.first?.symbols.isEmpty == false, "frame 0 is symbolicated")
    case .withinFirstInApp(let name, let count):
        let top = report.frames.filter { $0.imageIndex == appImage }.prefix(count)
        #expect(top.contains { $0.symbols.contains { $0.function.contains(name) } }, "\(Array(top))")
    case .none: break
    }

    switch (crash.message, build) {
    case (.always(let text), _), (.debugOnly(let text), .debug):
        #expect(report.fatalMessage?.contains(text) == true, "fatal message: \(report.fatalMessage ?? "nil")")
    default: break
    }
    if build == .release, let reason = crash.releaseReason {
        #expect(report.reason == reason)
        #expect(report.frames.first?.symbols.first?.function == reason)
    }
}

@Suite("Crash matrix", .serialized)
struct CrashMatrixTests {
    static let debugAndRelease = Build.allCases.filter { $0.binDirectory != nil }

    @Test(
        "each crash gives one report, the right signal and frame, and kills the process by the signal",
        arguments: CrashCase.all, debugAndRelease)
    func matrix(_ crash: CrashCase, build: Build) throws {
        let executable = "\(try #require(build.binDirectory))/blackbox-crash-child"
        for place in crash.places {
            let directory = TemporaryDirectory()
            let (result, report, outcome) = try crashAndProcess(
                crash.kind, on: place, build: build, directory: directory)
            #expect(result.signaled && result.status == crash.signal, "\(place): exit \(result.status)")
            #expect(outcome.processed.count == 1, "\(place): \(outcome.processed.count) reports")
            #expect(outcome.quarantined.isEmpty && outcome.failures.isEmpty)
            let processed = try #require(report, "\(crash.kind) on \(place) (\(build)): no report")
            try check(processed, crash, place: place, build: build, executable: executable)
            // The raw file is gone once the processed one is durable; JSON and text are both there.
            #expect(directoryEntries("\(directory.path)/crashes/pending").isEmpty)
            let outbox = directoryEntries("\(directory.path)/outbox")
            #expect(
                outbox.filter { $0.hasSuffix(".json") }.count == 1 && outbox.filter { $0.hasSuffix(".txt") }.count == 1)
        }
    }

    @Test(
        "with the Swift runtime's backtracer on, both reports appear and the exit status is still the signal",
        arguments: CrashCase.all.filter { $0.kind != "stack-overflow" })
    func withSwiftBacktracer(_ crash: CrashCase) throws {
        let executable = "\(try #require(Build.debug.binDirectory))/blackbox-crash-child"
        for place in ["main", "thread"] {
            let directory = TemporaryDirectory()
            let (result, report, _) = try crashAndProcess(
                crash.kind, on: place, build: .debug, swiftBacktrace: true, directory: directory)
            #expect(result.signaled && result.status == crash.signal, "\(place): exit \(result.status)")
            #expect(
                result.stderr.contains("Backtracing from") || result.stderr.contains("crashed"),
                "\(result.stderr.prefix(300))")
            let processed = try #require(report, "\(crash.kind) on \(place): no report")
            try check(processed, crash, place: place, build: .debug, executable: executable)
        }
    }

    @Test(
        "by default the Swift runtime's backtracer does not run after Blackbox's report: the process dies at once, by the signal",
        arguments: [Build.debug, .release])
    func swiftBacktracerSkipped(build: Build) throws {
        let executable = "\(try #require(build.binDirectory))/blackbox-crash-child"
        for place in ["main", "dispatch"] {
            let directory = TemporaryDirectory()
            let result = try runProgram(
                executable, [directory.path, "index", place],
                environment: ["SWIFT_BACKTRACE": "enable=yes,interactive=no,color=no"])
            #expect(result.signaled && result.status == SIGILL, "\(place): exit \(result.status)")
            #expect(!result.stderr.contains("Backtracing from"), "\(result.stderr.prefix(300))")
            #expect(!result.stderr.contains("failed to suspend thread"), "\(result.stderr.prefix(300))")
            let outcome = CrashReportProcessor(directory: directory.path).processPending()
            let report = try #require(outcome.processed.first?.report, "\(place): no report")
            #expect(!report.partial, "\(report.notes)")
            #expect(report.threads?.count ?? 0 > 1, "every thread is in the report")
        }
        // A report that cannot be written leaves the crash to the runtime's backtracer.
        let gone = TemporaryDirectory()
        let unwritable = try runProgram(
            executable, [gone.path, "index", "main"],
            environment: ["SWIFT_BACKTRACE": "enable=yes,interactive=no,color=no", "CRASH_CHILD_REMOVE_PENDING": "1"])
        #expect(unwritable.signaled && unwritable.status == SIGILL)
        #expect(
            unwritable.stderr.contains("Backtracing from") || unwritable.stderr.contains("Crash"),
            "\(unwritable.stderr.prefix(300))")
    }

    @Test("an external kill -SEGV is reported with SI_USER and the sender's pid")
    func externalSignal() throws {
        let directory = TemporaryDirectory()
        let executable = "\(try #require(Build.debug.binDirectory))/blackbox-crash-child"
        let process = try startProgram(
            executable, [directory.path, "wait-for-signal", "main"], environment: ["SWIFT_BACKTRACE": "enable=no"])
        kill(process.processIdentifier, SIGSEGV)
        #expect(try process.waitForOutcome().signal == SIGSEGV)
        let outcome = CrashReportProcessor(directory: directory.path).processPending()
        let report = try #require(outcome.processed.first?.report)
        #expect(outcome.processed.count == 1)
        #expect(report.signal?.number == SIGSEGV && report.signal?.code == 0 && report.signal?.codeName == "SI_USER")
        #expect(report.signal?.senderPID == getpid())
        #expect(report.diagnosis?.kind == .externalSignal, "\(report.diagnosis?.summary ?? "none")")
        #expect(report.signal?.faultMemory == nil, "a signal another process sent has no fault to map")
        #expect(report.symbolicated)
    }
}
