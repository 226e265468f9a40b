import BlackboxFormat
import Foundation
import Testing

@testable import BlackboxCollector

/// Bundles carrying a signal handler's raw report (manifest format 2, `raw-report`), as `blackbox
/// deliver-crash` sends them: the collector builds the report itself (the end-to-end path with a
/// real crash: CrashTimeDeliveryTests).
@Suite("Ingest of raw reports sent at crash time")
struct RawReportIngestTests {
    static let raw = """
        blackbox-raw-crash 2
        app shop
        app-version 1.2
        host web-1
        signal 11 SIGSEGV
        code 1
        address 0x0
        time 1795000000 500000000
        pid 42
        tid 42
        thread main
        fp 0x401010
        fp 0x402020
        fp-end
        unwind 0x401010
        unwind 0x402020
        unwind-end 2 ok
        image 0x400000 0x400000 0x500000 abcdef0123456789 /srv/shop
        thread-begin 43 ok frame-pointers
        thread-name worker
        thread-frame 0x401500
        thread-end 1
        thread-begin 44 no-answer none
        thread-end 0
        threads-end 2000000
        end

        """

    static func bundle(raw: String, tail: String?, formatVersion: Int? = nil) throws -> Data {
        var files: [(String, BundleManifest.Entry.Kind, Data)] = [
            ("reports/crash-1-42-11.raw", .rawReport, Data(raw.utf8))
        ]
        if let tail { files.append(("reports/crash-1-42-11.tail.log", .log, Data(tail.utf8))) }
        var manifest = BundleManifest(
            app: .init(name: "shop", version: "1.2", build: nil), host: "web-1",
            entries: files.map {
                .init(path: $0.0, kind: $0.1, size: Int64($0.2.count), sha256: BundleArchive.sha256($0.2))
            })
        if let formatVersion { manifest.formatVersion = formatVersion }
        return try BundleArchive.zip([("manifest.json", try manifest.encoded())] + files.map { ($0.0, $0.2) })
    }

    @Test("the report is built from the raw one: facts, frames with their image, every thread, the log lines")
    func built() throws {
        let tail = (1...80).map { "2026-11-23T10:00:00Z info line \($0)" }.joined(separator: "\n") + "\n"
        let inspection = try BundleInspector(limits: IngestLimits()).inspect(
            bytes: try Self.bundle(raw: Self.raw, tail: tail))
        #expect(inspection.manifest?.formatVersion == 2)
        let report = try #require(inspection.reports.first)
        #expect(inspection.reports.count == 1)
        #expect(report.app == .init(name: "shop", version: "1.2", build: nil) && report.host.name == "web-1")
        #expect(report.signal?.name == "SIGSEGV" && report.signal?.codeName == "SEGV_MAPERR")
        #expect(report.process.pid == 42 && report.process.crashTime.timeIntervalSince1970 == 1_795_000_000.5)
        #expect(report.frameSource == "libunwind" && report.frames.map(\.imageOffset) == ["0x1010", "0x2020"])
        #expect(report.images.first?.buildID == "abcdef0123456789" && report.frames.allSatisfy { $0.symbols.isEmpty })
        let threads = try #require(report.threads)
        #expect(threads.map(\.id) == [42, 43, 44] && threads[1].name == "worker" && threads[2].problem == "no-answer")
        #expect(report.logTail.count == 50 && report.logTail.last == "2026-11-23T10:00:00Z info line 80")
        #expect(report.notes.contains("sent at crash time as a raw report; built by the collector"))
        #expect(!report.partial, "\(report.notes)")
        // Waiting for the build-id's symbols, like any report stored unnamed.
        #expect(ReportSymbols.imageUses(report) == [.init(buildID: "abcdef0123456789", resolved: false)])
        #expect(inspection.files.first { $0.path.hasSuffix(".raw") }?.kind == .other)
        #expect(inspection.files.first { $0.path.hasSuffix(".tail.log") }?.kind == .log)
    }

    @Test("a raw report cut short is kept and marked partial; no log lines is fine")
    func cutShort() throws {
        let cut = String(Self.raw.prefix(while: { $0 != "u" }))  // ends before the libunwind walk
        let report = try #require(
            try BundleInspector(limits: IngestLimits()).inspect(bytes: try Self.bundle(raw: cut, tail: nil)).reports
                .first)
        #expect(report.partial && report.frameSource == "frame-pointers" && report.frames.count == 2)
        #expect(report.logTail.isEmpty)
    }

    @Test("a hostile raw report cannot build a report larger than a real one")
    func bounded() throws {
        // Just past each limit: the point is where the parser stops, not how long a huge file takes.
        var lines = ["blackbox-raw-crash 2", "signal 11 SIGSEGV"]
        lines += (0..<(RawCrashReport.Limits.frames + 500)).map { "fp 0x\(String(0x401000 + $0, radix: 16))" }
        lines += (0..<(RawCrashReport.Limits.threads + 50)).flatMap { thread in
            let frames = thread == 0 ? RawCrashReport.Limits.threadFrames + 50 : 1
            return ["thread-begin \(thread + 100) ok frame-pointers"]
                + (0..<frames).map { _ in "thread-frame 0x401000" }
        }
        let extra = RawCrashReport.Limits.entries + 50
        lines += (0..<extra).map { "register r\($0) 0x1" } + (0..<extra).map { "key\($0) value" } + ["end"]
        let raw = lines.joined(separator: "\n") + "\n"
        let report = try #require(
            try BundleInspector(limits: IngestLimits()).inspect(bytes: try Self.bundle(raw: raw, tail: nil)).reports
                .first)
        #expect(report.frames.count == RawCrashReport.Limits.frames)
        let threads = try #require(report.threads)
        #expect(threads.count == RawCrashReport.Limits.threads + 1)
        #expect(threads.dropFirst().allSatisfy { $0.frames.count <= RawCrashReport.Limits.threadFrames })
        #expect(threads[1].frames.count == RawCrashReport.Limits.threadFrames)
        #expect(report.registers.count == RawCrashReport.Limits.entries)
        #expect(report.partial && report.notes.contains { $0.contains("lines past what a signal handler writes") })
    }

    @Test(
        "lengths and numbers at the edges of Int (the 548-byte bundle that killed the collector) are refused or kept, never trapped on"
    )
    func extremeNumbers() throws {
        let inspector = BundleInspector(limits: IngestLimits())
        for line in [
            "message 9223372036854775807", "journal 0 9223372036854775807", "journal 18446744073709551615 8",
            "message -9223372036854775808", "time 9223372036854775807 9223372036854775807",
            "threads-omitted 9223372036854775807", "unwind-omitted 9223372036854775807",
            "threads-end -9223372036854775808",
        ] {
            let raw = "blackbox-raw-crash 2\napp x\n\(line)\nxx\nend\n"
            let report = try #require(
                try inspector.inspect(bytes: try Self.bundle(raw: raw, tail: nil)).reports.first, "\(line)")
            _ = report.textRendering
        }
    }

    @Test("what is not a raw report, or sits where one cannot, is refused with the entry named")
    func refused() throws {
        let inspector = BundleInspector(limits: IngestLimits())
        #expect(throws: APIError.self) {
            try inspector.inspect(bytes: try Self.bundle(raw: "{\"json\": true}", tail: nil))
        }
        let garbage = try Self.bundle(raw: "not a raw report\n", tail: nil)
        do {
            _ = try inspector.inspect(bytes: garbage)
            Issue.record("accepted")
        } catch {
            #expect(error.status.code == 422 && error.message.contains("reports/crash-1-42-11.raw"), "\(error)")
        }
        // A raw report listed under another name is never parsed.
        let data = Data(Self.raw.utf8)
        let manifest = BundleManifest(
            app: .init(name: "shop", version: nil, build: nil), host: "h",
            entries: [
                .init(path: "logs/x.raw", kind: .rawReport, size: Int64(data.count), sha256: BundleArchive.sha256(data))
            ])
        #expect(throws: APIError.self) {
            try inspector.inspect(
                bytes: try BundleArchive.zip([("manifest.json", try manifest.encoded()), ("logs/x.raw", data)]))
        }
        // A manifest from a future format is refused, not misread.
        #expect(throws: APIError.self) {
            try inspector.inspect(
                bytes: try Self.bundle(raw: Self.raw, tail: nil, formatVersion: BundleManifest.currentFormatVersion + 1)
            )
        }
    }

    @Test("a manifest without a raw report is still format 1, for collectors that know only 1")
    func formatVersions() throws {
        let plain = BundleManifest(app: .init(name: "a", version: nil, build: nil), host: "h", entries: [])
        #expect(plain.formatVersion == 1)
        let withRaw = BundleManifest(
            app: .init(name: "a", version: nil, build: nil), host: "h",
            entries: [.init(path: "reports/r.raw", kind: .rawReport, size: 1, sha256: "00")])
        #expect(withRaw.formatVersion == 2)
    }
}
