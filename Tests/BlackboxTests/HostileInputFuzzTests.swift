import BlackboxFormat
import BlackboxSymbols
import BlackboxTestSupport
import Foundation
import Testing

@testable import Blackbox

/// Seeded random-mutation fuzzing of every parser that reads bytes Blackbox did not write itself in
/// this process: raw crash reports (the collector parses uploaded ones), report and manifest JSON,
/// session files and ELF files. A trap kills the test process, so "no crash" is the assertion; each
/// target also checks a property of what it parsed, and every input's CPU time is held to a linear
/// budget (`Fuzzer`). `BLACKBOX_FUZZ_SEED` repeats a run, `BLACKBOX_FUZZ_SECONDS` (default 2) sets
/// how long each target runs.
@Suite("Hostile input fuzzing")
struct HostileInputFuzzTests {
    @Test("raw crash reports: parsing, assembling and the journal tail never trap, and stay within the limits")
    func rawCrashReports() throws {
        var corpus = [Array(HostileCorpus.rawReport.utf8)]
        if let real = try? CrashReportProcessingTests.rawReport() { corpus.append(real) }
        let assembler = CrashReportAssembler()
        let outcome = Fuzzer.run("raw crash report", corpus: corpus, numbers: true) { bytes in
            guard let raw = try? RawCrashReport(bytes: bytes) else { return }
            #expect(raw.unwindFrames.count <= RawCrashReport.Limits.frames)
            #expect(raw.otherThreads.count <= RawCrashReport.Limits.threads)
            #expect(raw.journalBytes.count <= bytes.count)
            var report = assembler.assemble(raw) { _, _ in "f" }
            if let start = raw.journalStart {
                report.logTail = JournalTail.lines(bytes: raw.journalBytes, startPosition: start, limit: 100)
            }
            CrashReportAssembler.finish(&report)
            _ = report.textRendering
        }
        #expect(outcome.runs > 0 && outcome.overBudget.isEmpty, "\(outcome.overBudget)")
    }

    /// The clock itself: an input that costs more CPU than its budget is reported, one within it not.
    @Test("the fuzzer's clock reports a quadratic path and passes a linear one")
    func clockCatchesQuadraticWork() {
        let input = [UInt8](repeating: 7, count: 2_048)
        func quadratic(_ bytes: [UInt8]) {
            var sum = 0
            for a in bytes { for b in bytes { sum &+= Int(a ^ b) } }
            #expect(sum == 0)
        }
        let caught = Fuzzer.run(
            "quadratic", corpus: [input], numbers: false, iterationsCap: 1, budget: { _ in 0.01 }, quadratic)
        #expect(caught.overBudget.count == 1 && caught.slowest.size == 2_048, "\(caught.slowest)")
        func linearWork(_ bytes: [UInt8]) { #expect(bytes.reduce(0) { $0 &+ Int($1) } == 7 * 2_048) }
        let linear = Fuzzer.run(
            "linear", corpus: [input], numbers: false, iterationsCap: 1, budget: { _ in 0.01 }, linearWork)
        #expect(linear.overBudget.isEmpty, "\(linear.slowest)")
    }

    @Test("crash report JSON: decoding and rendering as text never trap")
    func crashReportJSON() throws {
        let encoded = try Array(CrashReport.makeEncoder().encode(HostileCorpus.report()))
        let outcome = Fuzzer.run("crash report JSON", corpus: [encoded], numbers: true) { bytes in
            guard let decoded = try? CrashReport.decode(Data(bytes)) else { return }
            _ = decoded.textRendering
            _ = decoded.stacks
        }
        #expect(outcome.runs > 0 && outcome.overBudget.isEmpty, "\(outcome.overBudget)")
    }

    @Test("bundle manifests and session summaries: decoding never traps")
    func manifestsAndSessions() throws {
        let corpus = [try Array(HostileCorpus.manifest().encoded())]
        #expect(try BundleManifest.decode(Data(corpus[0])).sessions?.count == 1)
        let outcome = Fuzzer.run("manifest", corpus: corpus, numbers: true) { bytes in
            guard let manifest = try? BundleManifest.decode(Data(bytes)) else { return }
            _ = try? manifest.encoded()
            _ = manifest.sessions.map { $0.reduce(0) { $0 &+ $1.clean &+ $1.crashed &+ $1.hung &+ $1.killed } }
        }
        #expect(outcome.runs > 0 && outcome.overBudget.isEmpty, "\(outcome.overBudget)")
    }

    @Test("ELF files: build-id, sections and symbol lookups never trap on a damaged file")
    func elfFiles() throws {
        let original = try #require(DurableFile.read("/usr/bin/true"), "a small ELF file to mutate")
        let directory = TemporaryDirectory()
        let path = "\(directory.path)/mutant"
        let outcome = Fuzzer.run("ELF", corpus: [original], numbers: false, iterationsCap: 4_000) { bytes in
            guard (try? DurableFile.write(bytes, to: path)) != nil else { return }
            if let buildID = ELFBuildID.read(path: path) { #expect(ELFBuildID.isValid(buildID)) }
            _ = ELFSymbolFile(path: path)
            if let table = ELFSymbolTable(path: path) {
                for offset: UInt64 in [0, 0x1000, 0x2000, 0x4000, UInt64.max] { _ = table.symbol(at: offset) }
            }
        }
        #expect(outcome.runs > 0 && outcome.overBudget.isEmpty, "\(outcome.overBudget)")
    }
}

/// Seed inputs that name every key and field the parsers know, so mutations reach every branch.
enum HostileCorpus {
    static let rawReport = """
        blackbox-raw-crash 1
        app fuzz
        app-version 1.2.3
        start-time 1700000000.5
        exe /nonexistent/fuzz
        signal 11 SIGSEGV
        code 1
        address 0x10
        sender-pid 12
        time 1700000001 500
        pid 42
        tid 43
        thread main
        register rip 0x401000
        register rsp 0x7ffc0000
        message 5
        hello
        fp 0x401000
        fp 0x401010
        fp-end
        unwind 0x401000
        unwind-omitted 3
        unwind 0x401020
        unwind-end 0 ok
        image 0x400000 0x400000 0x500000 0123456789abcdef0123456789abcdef01234567 /nonexistent/fuzz
        late-image 0x600000 /nonexistent/late.so
        async 1 0x401030 0x401040
        thread-begin 44 ok libunwind
        thread-name worker
        thread-frame 0x401050
        thread-end 44 truncated
        threads-omitted 2
        threads-unavailable no-proc
        threads-end 12000
        nested-fault 11 0x0
        nested-fault-unrecoverable
        watchdog-timeout
        annotation request-id abc
        metadata user 7
        journal 8 16
        0123456789abcdef
        end

        """

    /// A report with every section, from the raw report above.
    static func report() throws -> CrashReport {
        let raw = try RawCrashReport(bytes: Array(rawReport.utf8))
        var report = CrashReportAssembler().assemble(raw) { _, _ in "f" }
        report.logTail = ["a line", "another"]
        CrashReportAssembler.finish(&report)
        return report
    }

    static func manifest() -> BundleManifest {
        BundleManifest(
            app: .init(name: "fuzz", version: "1.0", build: "7"), host: "h",
            entries: [
                .init(path: "reports/a.json", kind: .report, size: 10, sha256: String(repeating: "0", count: 64)),
                .init(path: "reports/a.raw", kind: .rawReport, size: 9, sha256: String(repeating: "a", count: 64)),
            ],
            sessions: [
                SessionSummary(
                    appVersion: "1.0", clean: 3, crashed: 1, hung: 0, killed: 2,
                    firstStart: Date(timeIntervalSince1970: 1_700_000_000),
                    lastEnd: Date(timeIntervalSince1970: 1_700_003_600))
            ])
    }
}

@Suite("Report times from files")
struct ReportTimeParsingTests {
    @Test("malformed times are refused, never trapped on (the fuzzer's first find: \"Z\" alone)")
    func malformed() {
        for text in ["Z", ".Z", "..Z", ".5Z", "2026-11-25T10:00:00.Z", "2026-11-25T10:00:00.+1Z", "", "x", "2026Z"] {
            #expect(ReportTime.parse(text) == nil, "\(text)")
        }
        #expect(ReportTime.parse("2026-11-25T10:00:00.5Z")?.timeIntervalSince1970 == 1_795_600_800.5)
        #expect(ReportTime.parse("2026-11-25T10:00:00Z") != nil)
    }
}

@Suite("Frames find their images")
struct FrameImageTests {
    /// The report's frames, each with the image it was given, from a raw report of `images` lines and
    /// one frame per address.
    static func imageIndices(images: [(UInt64, UInt64)], addresses: [UInt64]) throws -> [Int?] {
        var raw = "blackbox-raw-crash 1\napp x\n"
        for address in addresses { raw += "unwind 0x\(String(address, radix: 16))\n" }
        raw += "unwind-end 0 ok\n"
        for (index, (start, end)) in images.enumerated() {
            raw +=
                "image 0x\(String(start, radix: 16)) 0x\(String(start, radix: 16)) 0x\(String(end, radix: 16)) ab /lib\(index).so\n"
        }
        raw += "end\n"
        return CrashReportAssembler().assemble(try RawCrashReport(bytes: Array(raw.utf8))).frames.map(\.imageIndex)
    }

    @Test(
        "4,096 images in any order: every frame gets the image that holds it, or none; overlapping images: the first listed"
    )
    func lookup() throws {
        var random = SplitMix64(seed: 7)
        // Disjoint images of 4 KiB with gaps, listed shuffled.
        var images = (0..<4_096).map { index -> (UInt64, UInt64) in
            let start = 0x10_0000 + UInt64(index) * 0x2000
            return (start, start + 0x1000)
        }
        images.shuffle(using: &random)
        let addresses = (0..<1_000).map { _ in 0x10_0000 - 0x100 + random.next() % (4_097 * 0x2000) }
        let expected = addresses.map { address in images.firstIndex { address >= $0.0 && address < $0.1 } }
        #expect(try Self.imageIndices(images: images, addresses: addresses) == expected)
        #expect(expected.contains(nil) && expected.contains { $0 != nil }, "both cases are exercised")

        let overlapping: [(UInt64, UInt64)] = [(0x2000, 0x3000), (0x1000, 0x4000), (0x5000, 0x4000)]
        #expect(
            try Self.imageIndices(images: overlapping, addresses: [0x1500, 0x2500, 0x3500, 0x4500]) == [1, 0, 1, nil])
    }
}
