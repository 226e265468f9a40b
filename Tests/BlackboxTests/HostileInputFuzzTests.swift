import BlackboxFormat
import BlackboxSymbols
import BlackboxTestSupport
import Foundation
import Testing

@testable import Blackbox

/// Seeded random-mutation fuzzing of every parser that reads bytes Blackbox did not write itself in
/// this process: raw crash reports (the collector parses uploaded ones), report and manifest JSON,
/// session files and ELF files. A trap kills the test process, so "no crash" is the assertion; each
/// target also checks a property of what it parsed. `BLACKBOX_FUZZ_SEED` repeats a run,
/// `BLACKBOX_FUZZ_SECONDS` (default 2) sets how long each target runs.
@Suite("Hostile input fuzzing")
struct HostileInputFuzzTests {
    static let seconds = ProcessInfo.processInfo.environment["BLACKBOX_FUZZ_SECONDS"].flatMap(Double.init) ?? 2

    @Test("raw crash reports: parsing, assembling and the journal tail never trap, and stay within the limits")
    func rawCrashReports() throws {
        var corpus = [Array(HostileCorpus.rawReport.utf8)]
        if let real = try? CrashReportProcessingTests.rawReport() { corpus.append(real) }
        let assembler = CrashReportAssembler()
        let runs = Mutator.fuzz("raw crash report", corpus: corpus, numbers: true) { bytes in
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
        #expect(runs > 0)
    }

    @Test("crash report JSON: decoding and rendering as text never trap")
    func crashReportJSON() throws {
        let encoded = try Array(CrashReport.makeEncoder().encode(HostileCorpus.report()))
        let runs = Mutator.fuzz("crash report JSON", corpus: [encoded], numbers: true) { bytes in
            guard let decoded = try? CrashReport.decode(Data(bytes)) else { return }
            _ = decoded.textRendering
            _ = decoded.stacks
        }
        #expect(runs > 0)
    }

    @Test("bundle manifests and session summaries: decoding never traps")
    func manifestsAndSessions() throws {
        let corpus = [try Array(HostileCorpus.manifest().encoded())]
        #expect(try BundleManifest.decode(Data(corpus[0])).sessions?.count == 1)
        let runs = Mutator.fuzz("manifest", corpus: corpus, numbers: true) { bytes in
            guard let manifest = try? BundleManifest.decode(Data(bytes)) else { return }
            _ = try? manifest.encoded()
            _ = manifest.sessions.map { $0.reduce(0) { $0 &+ $1.clean &+ $1.crashed &+ $1.hung &+ $1.killed } }
        }
        #expect(runs > 0)
    }

    @Test("ELF files: build-id, sections and symbol lookups never trap on a damaged file")
    func elfFiles() throws {
        let original = try #require(DurableFile.read("/usr/bin/true"), "a small ELF file to mutate")
        let directory = TemporaryDirectory()
        let path = "\(directory.path)/mutant"
        let runs = Mutator.fuzz("ELF", corpus: [original], numbers: false, iterationsCap: 4_000) { bytes in
            guard (try? DurableFile.write(bytes, to: path)) != nil else { return }
            if let buildID = ELFBuildID.read(path: path) { #expect(ELFBuildID.isValid(buildID)) }
            _ = ELFSymbolFile(path: path)
            if let table = ELFSymbolTable(path: path) {
                for offset: UInt64 in [0, 0x1000, 0x2000, 0x4000, UInt64.max] { _ = table.symbol(at: offset) }
            }
        }
        #expect(runs > 0)
    }
}

/// Mutates seed inputs the way the attacks in the security reviews did: bit flips, interesting bytes
/// and 64-bit values, numbers replaced by the extremes of every integer width, cuts, repeated and
/// dropped chunks.
enum Mutator {
    static let extremes = [
        "0", "-1", "1", "9223372036854775807", "9223372036854775808", "-9223372036854775808",
        "18446744073709551615", "18446744073709551616", "4294967296", "2147483647", "999999999999999999",
        "4611686018427387904", "0x7fffffffffffffff", "0xffffffffffffffff", "1e308", "-0", "NaN",
    ].map { Array($0.utf8) }
    static let words: [UInt64] = [
        0, 1, 0x7F, 0x80, 0xFF, 0xFFFF, 0x7FFF_FFFF, 0xFFFF_FFFF, 1 << 32, 1 << 62, .max, 1 << 63,
    ]

    /// Runs `body` on mutants until the time is up; returns how many ran.
    static func fuzz(
        _ name: String, corpus: [[UInt8]], numbers: Bool, iterationsCap: Int = .max, _ body: ([UInt8]) -> Void
    ) -> Int {
        let seed =
            ProcessInfo.processInfo.environment["BLACKBOX_FUZZ_SEED"].flatMap { UInt64($0) }
            ?? UInt64.random(in: 1...UInt64.max)
        // Unbuffered, so that the seed is out before a trap ends the process.
        FileHandle.standardError.write(
            Data("fuzz \(name): seed \(seed) (BLACKBOX_FUZZ_SEED=\(seed) repeats it)\n".utf8))
        var random = SplitMix64(seed: seed)
        let deadline = Date().addingTimeInterval(HostileInputFuzzTests.seconds)
        var runs = 0
        for input in corpus {
            body(input)
            runs += 1
        }
        while Date() < deadline, runs < iterationsCap {
            var bytes = corpus[Int(random.next() % UInt64(corpus.count))]
            for _ in 0...Int(random.next() % 4) { mutate(&bytes, numbers: numbers, random: &random) }
            body(bytes)
            runs += 1
        }
        print("fuzz \(name): \(runs) inputs, none trapped")
        return runs
    }

    static func mutate(_ bytes: inout [UInt8], numbers: Bool, random: inout SplitMix64) {
        guard !bytes.isEmpty else {
            bytes = [UInt8(truncatingIfNeeded: random.next())]
            return
        }
        let at = Int(random.next() % UInt64(bytes.count))
        switch random.next() % (numbers ? 8 : 6) {
        case 0: bytes[at] ^= 1 << UInt8(random.next() % 8)
        case 1: bytes[at] = [0, 0xFF, 0x7F, 0x80, 0x0A, 0x20][Int(random.next() % 6)]
        case 2:
            let word = words[Int(random.next() % UInt64(words.count))]
            for index in 0..<min(8, bytes.count - at) {
                bytes[at + index] = UInt8(truncatingIfNeeded: word >> (8 * index))
            }
        case 3: bytes.removeSubrange(at...)
        case 4:
            let end = min(bytes.count, at + 1 + Int(random.next() % 256))
            bytes.insert(contentsOf: bytes[at..<end], at: end)
        case 5:
            let end = min(bytes.count, at + 1 + Int(random.next() % 64))
            bytes.removeSubrange(at..<end)
        default: replaceNumber(in: &bytes, near: at, random: &random)
        }
    }

    /// Replaces the decimal or hex number at or after `at` with an extreme value.
    private static func replaceNumber(in bytes: inout [UInt8], near at: Int, random: inout SplitMix64) {
        func isDigit(_ byte: UInt8) -> Bool { (0x30...0x39).contains(byte) }
        guard let start = bytes[at...].firstIndex(where: isDigit) ?? bytes[..<at].lastIndex(where: isDigit) else {
            return
        }
        var end = start
        while end < bytes.count, isDigit(bytes[end]) || bytes[end] == 0x78 || (0x61...0x66).contains(bytes[end]) {
            end += 1
        }
        bytes.replaceSubrange(start..<end, with: extremes[Int(random.next() % UInt64(extremes.count))])
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
