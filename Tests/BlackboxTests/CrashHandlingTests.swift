import BlackboxFormat
import BlackboxTestSupport
import Foundation
import Synchronization
import Testing

@testable import Blackbox

@Suite("Crash handler edge cases")
struct CrashHandlerEdgeCaseTests {
    var executable: String { "\(Build.debug.binDirectory ?? "")/blackbox-crash-child" }

    @Test("two threads crashing at once give one report and no hang")
    func twoThreads() throws {
        for _ in 0..<5 {
            let directory = TemporaryDirectory()
            let (result, report, outcome) = try crashAndProcess(
                "two-threads", on: "main", build: .debug, directory: directory)
            #expect(result.signaled && result.status == SIGSEGV)
            #expect(outcome.processed.count == 1)
            let processed = try #require(report)
            #expect(processed.thread.id != processed.process.pid, "a worker thread crashed")
            #expect(processed.frames.first?.symbols.first?.function.contains("bbx_test_null_write") == true)
            // The other crashing thread (waiting in the handler, or about to fault) is captured like
            // any other.
            let threads = try #require(processed.threads)
            #expect(threads.count >= 3 && threads.first?.crashed == true)
            #expect(threads.allSatisfy { $0.problem == nil && !$0.frames.isEmpty }, "\(threads.map(\.problem))")
        }
    }

    @Test("a line logged just before a crash reaches stdout, though the writer had not written it by the report's end")
    func lastLineReachesStandardOutput() throws {
        let directory = TemporaryDirectory()
        // The child holds its writer from before its last line until the raw report is complete.
        let (result, report, _) = try crashAndProcess(
            "index", on: "thread", build: .debug, directory: directory, environment: ["CRASH_CHILD_WRITER_LATE": "1"])
        #expect(result.signaled && result.status == SIGILL)
        #expect(result.stdout.contains("about to crash: index on thread"), "stdout: \(result.stdout)")
        let processed = try #require(report)
        #expect(!processed.partial && processed.logTail.contains { $0.contains("about to crash: index") })
    }

    @Test("a writer that never comes back delays the crash's end by a bounded wait only")
    func writerThatNeverReturns() throws {
        let directory = TemporaryDirectory()
        let (result, report, _) = try crashAndProcess(
            "index", on: "main", build: .debug, directory: directory,
            environment: ["CRASH_CHILD_WRITER_LATE": "forever"])
        #expect(result.signaled && result.status == SIGILL)
        #expect(!result.stdout.contains("about to crash"))
        let processed = try #require(report)
        #expect(!processed.partial && processed.logTail.contains { $0.contains("about to crash: index") })
        #expect(processed.notes.contains { $0.contains("within 250 ms") }, "\(processed.notes)")
    }

    @Test("a crash on the log writer's own thread is reported as such, without waiting for itself")
    func crashOnTheWriterThread() throws {
        let directory = TemporaryDirectory()
        let (result, report, _) = try crashAndProcess("writer-crash", on: "main", build: .debug, directory: directory)
        #expect(result.signaled && result.status == SIGILL)
        let processed = try #require(report)
        #expect(processed.thread.name == "blackbox-writer")
        #expect(processed.notes.contains { $0.contains("on the log writer's thread") }, "\(processed.notes)")
        #expect(processed.logTail.contains { $0.contains("an error that cannot be described") })
    }

    @Test("a fault inside a protected section of the handler is noted and the report goes on")
    func faultInProtectedSection() throws {
        let directory = TemporaryDirectory()
        let (result, report, _) = try crashAndProcess("handler-fault", on: "main", build: .debug, directory: directory)
        #expect(result.signaled && result.status == SIGSEGV)
        let processed = try #require(report)
        #expect(processed.partial)
        #expect(
            processed.notes.contains { $0.contains("faulted while writing a section: 11 header") }, "\(processed.notes)"
        )
        // Later sections still made it: registers, frames, images, the log tail.
        #expect(!processed.registers.isEmpty && processed.frames.count >= 3 && !processed.images.isEmpty)
        #expect(processed.logTail.contains { $0.contains("about to crash: handler-fault") })
    }

    @Test("a fault outside any protected section still ends the process by the original signal")
    func faultOutsideProtection() throws {
        let directory = TemporaryDirectory()
        let (result, report, _) = try crashAndProcess(
            "handler-fault-unprotected", on: "main", build: .debug, directory: directory)
        #expect(result.signaled && result.status == SIGSEGV)
        let processed = try #require(report)
        #expect(processed.partial)
        #expect(processed.notes.contains { $0.contains("unrecoverable") }, "\(processed.notes)")
        // Everything before the fault is there.
        #expect(!processed.images.isEmpty && processed.frameSource == "frame-pointers")
    }
}

@Suite("Crash report processing")
struct CrashReportProcessingTests {
    /// A real raw report, made by crashing the child once.
    static func rawReport() throws -> [UInt8] {
        let directory = TemporaryDirectory()
        let executable = "\(Build.debug.binDirectory ?? "")/blackbox-crash-child"
        _ = try runProgram(
            executable, [directory.path, "null-write", "main"], environment: ["SWIFT_BACKTRACE": "enable=no"])
        let pending = "\(directory.path)/crashes/pending"
        let name = try #require(directoryEntries(pending).first)
        return try #require(DurableFile.read("\(pending)/\(name)"))
    }

    func place(_ bytes: [UInt8], as name: String, in directory: TemporaryDirectory) throws {
        try makeDirectory("\(directory.path)/crashes/pending")
        try DurableFile.write(bytes, to: "\(directory.path)/crashes/pending/\(name)")
    }

    @Test("a truncated raw report still gives the best report possible, marked partial")
    func truncated() throws {
        let raw = try Self.rawReport()
        let text = String(decoding: raw, as: UTF8.self)
        // Cut in the middle of the image table: header, registers and frames survive.
        let cut = try #require(text.range(of: "\nimage ")).upperBound
        let prefix = Array(text.utf8.prefix(text.utf8.distance(from: text.startIndex, to: cut) + 20))
        let directory = TemporaryDirectory()
        try place(prefix, as: "crash-1-\(Self.deadPID)-11.raw", in: directory)
        let outcome = CrashReportProcessor(directory: directory.path).processPending()
        let report = try #require(outcome.processed.first?.report)
        #expect(report.partial)
        #expect(report.notes.contains { $0.contains("ends early") })
        #expect(report.signal?.name == "SIGSEGV" && report.registers.count > 10)
        #expect(report.frameSource == "frame-pointers" && report.frames.count >= 3)
    }

    @Test("cut at every point, a raw report never makes processing fail")
    func everyCut() throws {
        let raw = try Self.rawReport()
        let builder = CrashReportBuilder(symbolicator: nil)
        for length in stride(from: 0, through: raw.count, by: max(1, raw.count / 200)) {
            guard let parsed = try? RawCrashReport(bytes: Array(raw.prefix(length))) else {
                #expect(length < 21, "only a missing first line is refused (cut at \(length))")
                continue
            }
            let report = builder.build(from: parsed)
            #expect(report.partial == (length < raw.count - 1) || length >= raw.count - 1)
        }
    }

    /// A pid no process can have (above the kernel's `pid_max` limit of 2^22).
    static let deadPID: Int32 = 999_999_999

    @Test("a raw report whose processing crashed the processing thread is quarantined, not retried")
    func crashLoop() throws {
        let raw = try Self.rawReport()
        let directory = TemporaryDirectory()
        // What an interrupted processing run leaves, and the crash report of that run's processor.
        try place(raw, as: "crash-1-1-11.raw.processing-\(Self.deadPID)-1", in: directory)
        let evidence = "blackbox-raw-crash 1\napp x\nthread bbx-crash-proc\nend\n"
        try place(Array(evidence.utf8), as: "crash-5-\(Self.deadPID)-4.raw", in: directory)
        try place(raw, as: "crash-2-2-11.raw", in: directory)
        let outcome = CrashReportProcessor(directory: directory.path).processPending()
        #expect(outcome.quarantined == ["\(directory.path)/crashes/quarantine/crash-1-1-11.raw"])
        #expect(outcome.processed.count == 2, "the healthy report and the processor's own crash are processed")
        #expect(FileManager.default.fileExists(atPath: "\(directory.path)/crashes/quarantine/crash-1-1-11.raw"))
        #expect(directoryEntries("\(directory.path)/crashes/pending").isEmpty)
        // A second start finds nothing to do.
        let again = CrashReportProcessor(directory: directory.path).processPending()
        #expect(again.processed.isEmpty && again.quarantined.isEmpty)
    }

    @Test("an attempt that ended with its process for another reason is retried, up to the attempt limit")
    func interruptedAttemptsAreRetried() throws {
        let raw = try Self.rawReport()
        let directory = TemporaryDirectory()
        // The process died while processing, with no sign that processing killed it (a crash elsewhere
        // right after start, a kill); an earlier version's name too.
        try place(raw, as: "crash-1-11-11.raw.processing-\(Self.deadPID)-1", in: directory)
        try place(raw, as: "crash-2-12-11.raw.processing", in: directory)
        // The third attempt in a row that ended that way.
        try place(
            raw, as: "crash-3-13-11.raw.processing-\(Self.deadPID)-\(CrashReportProcessor.maxAttempts)", in: directory)
        // An attempt whose processor crashed elsewhere (its own report names another thread) is not
        // held against the report, however often it happened.
        let otherDead = Self.deadPID - 1
        try place(
            raw, as: "crash-4-14-11.raw.processing-\(otherDead)-\(CrashReportProcessor.maxAttempts)", in: directory)
        try place(
            Array("blackbox-raw-crash 1\napp x\nthread main\nend\n".utf8), as: "crash-6-\(otherDead)-4.raw",
            in: directory)
        let outcome = CrashReportProcessor(directory: directory.path).processPending()
        #expect(outcome.processed.count == 4, "two retried, the one released, and the other processor's own crash")
        #expect(outcome.quarantined == ["\(directory.path)/crashes/quarantine/crash-3-13-11.raw"])
        #expect(directoryEntries("\(directory.path)/crashes/pending").isEmpty)
    }

    @Test(
        "a pass leaves its own process's reports, reports a live process is still writing, and another live processor's"
    )
    func leavesWhatOthersAreDoing() throws {
        let raw = try Self.rawReport()
        let directory = TemporaryDirectory()
        let me = getpid()
        let now = Int(Date().timeIntervalSince1970)
        let unfinished = Array(raw.prefix(raw.count / 2))
        try place(raw, as: "crash-\(now)-\(me)-11.raw", in: directory)
        try place(unfinished, as: "crash-\(now)-1-12.raw", in: directory)  // pid 1 is alive: still writing
        try place(raw, as: "crash-3-21-11.raw.processing-1-1", in: directory)  // pid 1 processes it now
        try place(unfinished, as: "crash-4-\(Self.deadPID)-11.raw", in: directory)  // its writer died mid-report
        let outcome = CrashReportProcessor(directory: directory.path).processPending()
        #expect(outcome.processed.count == 1, "only the report whose writer died is processed (partial)")
        #expect(outcome.processed.first?.report.partial == true)
        #expect(outcome.quarantined.isEmpty)
        #expect(outcome.skipped.count == 3)
        #expect(
            Set(directoryEntries("\(directory.path)/crashes/pending")) == [
                "crash-\(now)-\(me)-11.raw", "crash-\(now)-1-12.raw", "crash-3-21-11.raw.processing-1-1",
            ])
    }

    @Test("a report written under a pid before the process now running as it started is processed")
    func pidRunningAgain() throws {
        // A container's app is pid 1 at every start: the last start's crash has this start's pid.
        // Here: this process's pid, and pid 1 (running since boot) with an unfinished report from
        // before the boot. Both crashed before the process now holding their pid started.
        let raw = try Self.rawReport()
        let directory = TemporaryDirectory()
        let me = getpid()
        let ownStart = try #require(ProcessFacts.startTime(of: me), "needs /proc")
        let bootStart = try #require(ProcessFacts.startTime(of: 1), "needs /proc")
        let unfinished = Array(raw.prefix(raw.count / 2))
        try place(raw, as: "crash-\(Int(ownStart) - 10)-\(me)-11.raw", in: directory)
        try place(unfinished, as: "crash-\(Int(bootStart) - 10)-1-12.raw", in: directory)
        let outcome = CrashReportProcessor(directory: directory.path).processPending()
        #expect(outcome.processed.count == 2, "skipped: \(outcome.skipped)")
        #expect(outcome.processed.map(\.report.partial).sorted { !$0 && $1 } == [false, true])
        #expect(directoryEntries("\(directory.path)/crashes/pending").isEmpty)
    }

    @Test("pending file names: every state round-trips, and hostile names are not taken")
    func pendingNames() {
        for name in [
            "crash-1-2-11.raw", "crash-1-2-11.raw.retry-2", "crash-1-2-11.raw.processing-77-3",
            "crash-1-2-11.raw.processing",
        ] {
            #expect(PendingCrashFile(name: name)?.name == name)
        }
        let taken = PendingCrashFile(name: "crash-1-2-11.raw.retry-2")?.takenBy(9)
        #expect(taken?.name == "crash-1-2-11.raw.processing-9-3")
        #expect(taken?.afterFailedAttempt().name == "crash-1-2-11.raw.retry-3")
        #expect(PendingCrashFile(name: "crash-1-2-11.raw")?.writerPID == 2)
        for hostile in [
            "notes.txt", "crash-1-2-11.raw.retry-0", "crash-1-2-11.raw.retry-99999999999999999999",
            "crash-1-2-11.raw.processing-x-1", "crash-1-2-11.raw.tmp", "other.raw",
        ] {
            #expect(PendingCrashFile(name: hostile) == nil, "\(hostile)")
        }
    }

    @Test("processing asked to stop (a shutdown) ends after the report at hand; the rest stay pending")
    func stopsWhenAsked() throws {
        let raw = try Self.rawReport()
        let directory = TemporaryDirectory()
        for pid in 1...3 { try place(raw, as: "crash-\(pid)-\(pid)-11.raw", in: directory) }
        let asked = Mutex(0)
        let outcome = CrashReportProcessor(directory: directory.path).processPending(while: {
            asked.withLock { count in
                count += 1
                return count == 1
            }
        })
        #expect(outcome.processed.count == 1 && outcome.failures.isEmpty)
        #expect(
            directoryEntries("\(directory.path)/crashes/pending").sorted() == ["crash-2-2-11.raw", "crash-3-3-11.raw"])
        #expect(
            CrashReportProcessor(directory: directory.path).processPending().processed.count == 2,
            "the next start takes them")
    }

    @Test("a clean exit while a start is still processing a report puts it back: the next start processes it")
    func exitDuringProcessing() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let executable = "\(Build.debug.binDirectory ?? "")/blackbox-crash-child"
        let crashed = try runProgram(
            executable, [directory.path, "null-write", "main"], environment: ["SWIFT_BACKTRACE": "enable=no"])
        #expect(crashed.signaled)
        // A symbolizer that answers nothing for 6 s: processing is still under way when `healthy`
        // exits cleanly after about 3 s.
        let slow = directory.write("slow-symbolizer", "#!/bin/sh\nsleep 6\n")
        chmod(slow, 0o755)
        let healthy = try runProgram(
            executable, [directory.path, "healthy", "main"],
            environment: [
                "SWIFT_BACKTRACE": "enable=no", "BLACKBOX_SYMBOLIZER": slow, "CRASH_CHILD_PROCESS_AT_START": "1",
            ])
        #expect(healthy.status == 0, "\(healthy.stderr)")
        let pending = directoryEntries("\(directory.path)/crashes/pending")
        #expect(
            pending.count == 1 && pending.first?.hasSuffix(".raw") == true, "put back, not left processing: \(pending)")
        #expect(directoryEntries("\(directory.path)/crashes/quarantine").isEmpty)
        let outcome = CrashReportProcessor(directory: directory.path).processPending()
        #expect(outcome.processed.count == 1 && outcome.quarantined.isEmpty)
    }

    @Test("a file that is not a raw report is quarantined with the reason")
    func notAReport() throws {
        let directory = TemporaryDirectory()
        try place(Array("garbage\n".utf8), as: "crash-3-\(Self.deadPID)-11.raw", in: directory)
        let outcome = CrashReportProcessor(directory: directory.path).processPending()
        #expect(outcome.quarantined.count == 1 && outcome.processed.isEmpty)
    }

    @Test("a rebuilt binary is flagged, not used to name frames")
    func buildIDMismatch() throws {
        var raw = String(decoding: try Self.rawReport(), as: UTF8.self)
        // Pretend the crashed executable had another build-id.
        let lines = raw.split(separator: "\n", omittingEmptySubsequences: false).map { line -> Substring in
            guard line.hasPrefix("image "), line.hasSuffix("blackbox-crash-child") else { return line }
            var parts = line.split(separator: " ")
            parts[4] = "00112233445566778899aabbccddeeff00112233"
            return Substring(parts.joined(separator: " "))
        }
        raw = lines.joined(separator: "\n")
        let directory = TemporaryDirectory()
        try place(Array(raw.utf8), as: "crash-4-\(Self.deadPID)-11.raw", in: directory)
        let report = try #require(
            CrashReportProcessor(directory: directory.path).processPending().processed.first?.report)
        let image = try #require(report.images.firstIndex { $0.path.hasSuffix("blackbox-crash-child") })
        #expect(report.images[image].buildIDMatches == false)
        #expect(report.notes.contains { $0.contains("build-id on disk") })
        #expect(report.frames.filter { $0.imageIndex == image }.allSatisfy { $0.symbols.isEmpty })
        #expect(report.frames.first?.imageOffset != nil, "raw offsets are kept for later symbolication")
    }

    @Test("reports round-trip through JSON and refuse unknown format versions")
    func jsonRoundTrip() throws {
        let directory = TemporaryDirectory()
        try place(try Self.rawReport(), as: "crash-5-5-11.raw", in: directory)
        let (report, path) = try #require(
            CrashReportProcessor(directory: directory.path).processPending().processed.first)
        let data = try #require(FileManager.default.contents(atPath: path))
        #expect(try CrashReport.decode(data) == report)
        let text = try String(contentsOfFile: path.replacingOccurrences(of: ".json", with: ".txt"), encoding: .utf8)
        #expect(text.contains("Exception:        SIGSEGV (11), code 1 (SEGV_MAPERR)"))
        #expect(text.contains("bbx_test_null_write"))
        let future = String(decoding: data, as: UTF8.self).replacingOccurrences(
            of: "\"formatVersion\" : \(CrashReport.currentFormatVersion)", with: "\"formatVersion\" : 99")
        #expect(throws: CrashReport.DecodingProblem.self) { try CrashReport.decode(Data(future.utf8)) }
    }
}
