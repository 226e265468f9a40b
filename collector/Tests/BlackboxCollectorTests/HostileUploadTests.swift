import BlackboxFormat
import BlackboxTestSupport
import Foundation
import Testing
import ZIPFoundation

@testable import BlackboxCollector

/// Zips made to hurt, by Python's zipfile (which writes whatever names and attributes it is given).
let hostileCorpusScript = #"""
    import io, os, sys, zipfile
    out = sys.argv[1]

    def write(name, entries, **kw):
        with zipfile.ZipFile(os.path.join(out, name), "w", zipfile.ZIP_DEFLATED) as z:
            for info, data in entries:
                z.writestr(info, data)

    def unix(name, mode):
        info = zipfile.ZipInfo(name)
        info.create_system = 3
        info.external_attr = mode << 16
        info.compress_type = zipfile.ZIP_DEFLATED
        return info

    write("slip-dotdot.zip", [("logs/ok.log", b"ok\n"), ("../../escaped-by-slip.txt", b"pwned\n")])
    write("slip-absolute.zip", [("/tmp/escaped-absolute.txt", b"pwned\n")])
    write("slip-backslash.zip", [("logs\\..\\..\\escaped.txt", b"pwned\n")])
    write("symlink.zip", [(unix("logs/passwd.log", 0o120777), b"/etc/passwd")])
    write("ratio-bomb.zip", [("logs/zeros.log", b"\0" * (40 << 20))])
    write("entry-count-bomb.zip", [("logs/%05d.log" % i, b"x") for i in range(150)])
    inner = io.BytesIO()
    with zipfile.ZipFile(inner, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("zeros.log", b"\0" * (8 << 20))
    write("nested-bomb.zip", [("logs/inner.zip", inner.getvalue())])
    write("big-entry.zip", [("logs/big.log", os.urandom(3 << 20))])
    write("duplicate-names.zip", [("logs/a.log", b"one\n"), ("logs/a.log", b"two\n")])
    damaged = os.path.join(out, "damaged-entry.zip")
    with zipfile.ZipFile(damaged, "w", zipfile.ZIP_STORED) as z:
        z.writestr("logs/a.log", b"hello checksum\n")
    data = open(damaged, "rb").read().replace(b"hello checksum", b"hellO checksum")
    open(damaged, "wb").write(data)
    """#

@Suite("Hostile uploads")
struct HostileUploadTests {
    @Test("every hostile upload is refused with its reason; nothing is written; the server keeps serving")
    func corpus() async throws {
        let collector = try await TestCollector.start { configuration in
            configuration.limits.maxBodyBytes = 8 << 20
            configuration.limits.maxEntries = 100
            configuration.limits.maxEntryBytes = 2 << 20
            configuration.limits.maxReportBytesPerBundle = 2 << 20
        }
        defer { Task { await collector.stop() } }
        let corpusScratch = TemporaryDirectory(prefix: "hostile")
        defer { corpusScratch.remove() }
        let corpus = corpusScratch.path
        #expect(try run("/usr/bin/env", ["python3", "-c", hostileCorpusScript, corpus], in: corpus) == 0)
        func file(_ name: String) throws -> Data { try Data(contentsOf: URL(fileURLWithPath: "\(corpus)/\(name)")) }

        let valid = try BundleArchive.make(
            app: .init(name: "shop"), host: "h", reports: [Reports.crash(functions: ["shop.f() -> ()"])],
            logs: [("a.log", Data("line\n".utf8))])
        var cases: [(String, Data, Int, String)] = [
            ("zip slip with ..", try file("slip-dotdot.zip"), 422, "unsafe_path"),
            ("zip slip with an absolute path", try file("slip-absolute.zip"), 422, "unsafe_path"),
            ("zip slip with backslashes", try file("slip-backslash.zip"), 422, "unsafe_path"),
            ("symlink entry", try file("symlink.zip"), 422, "symlink_entry"),
            ("bomb by ratio", try file("ratio-bomb.zip"), 422, "entry_too_large"),
            ("bomb by entry count", try file("entry-count-bomb.zip"), 422, "too_many_entries"),
            ("nested bomb", try file("nested-bomb.zip"), 422, "nested_archive"),
            ("entry whose bytes do not match its CRC-32", try file("damaged-entry.zip"), 422, "corrupt_zip"),
            ("truncated archive", valid.prefix(valid.count * 6 / 10), 422, "corrupt_zip"),
            ("a few bytes of zip", valid.prefix(10), 422, "corrupt_zip"),
            ("not a zip", Data((0..<5000).map { UInt8(truncatingIfNeeded: $0 &* 31) }), 422, "not_a_zip"),
            ("empty body", Data(), 400, "empty_body"),
            ("oversized body", Data(count: 9 << 20), 413, "body_too_large"),
            ("manifest that lies", try lyingManifest(), 422, "manifest_mismatch"),
            ("report that is not a report", try invalidReport(), 422, "invalid_report"),
            ("two entries of one name", try file("duplicate-names.zip"), 422, "duplicate_entry"),
            ("manifest listing one report 10,000 times", try repeatedListing(), 422, "manifest_mismatch"),
            ("reports that together inflate past the bundle's limit", try manyLargeReports(), 422, "reports_too_large"),
            // Found by HostileInputFuzzTests: the date parser trapped on "Z" alone, killing the process.
            ("manifest whose date is \"Z\"", try manifestDated("Z"), 422, "invalid_manifest"),
            ("manifest whose date is \".Z\"", try manifestDated(".Z"), 422, "invalid_manifest"),
        ]
        // The ratio limit on its own: small entries, a huge total ratio.
        cases.append(("bomb by total ratio", try ratioOnlyBomb(), 422, "compression_ratio"))

        for (name, body, status, code) in cases {
            for chunked in [false, true] {
                let response = try await HTTP.upload(collector, body, chunked: chunked)
                #expect(response.status == status, "\(name) (chunked: \(chunked)): \(response.text)")
                #expect(response.json["error"] as? String == code, "\(name): \(response.text)")
                #expect((response.json["message"] as? String)?.isEmpty == false)
            }
        }
        let noKey = try await HTTP.upload(collector, valid, credential: .none)
        #expect(noKey.status == 401 && noKey.json["error"] as? String == "missing_key")
        let wrongKey = try await HTTP.upload(collector, valid, credential: .secret("guess"))
        #expect(wrongKey.status == 401 && wrongKey.json["error"] as? String == "invalid_key")
        let badID = try await HTTP.upload(collector, valid, uploadID: "not-a-uuid")
        #expect(badID.status == 400 && badID.json["error"] as? String == "invalid_upload_id")

        // Nothing was stored, nothing escaped, nothing was left behind.
        #expect(try FileManager.default.contentsOfDirectory(atPath: "\(collector.directory)/tmp").isEmpty)
        // (The blob directory holds the empty symbol store's directory, and no file.)
        #expect(SymbolStoreTests.regularFiles(under: "\(collector.directory)/blobs").isEmpty)
        for escaped in [
            "/tmp/escaped-absolute.txt", "\(collector.directory)/../escaped-by-slip.txt",
            "\(corpus)/../../escaped-by-slip.txt",
        ] {
            #expect(!FileManager.default.fileExists(atPath: escaped), "\(escaped)")
        }
        #expect((try await HTTP.get(collector, "/api/v1/bundles").json["items"] as? [Any])?.isEmpty == true)
        // The server still serves. (Its memory is measured where it is alone in its process:
        // HostileProcessTests. Here every other test shares this process's RSS: a bound on it failed
        // by the neighbours' growth, not by this test's bombs.)
        #expect(try await HTTP.request("\(collector.baseURL)/health").status == 200)
        let after = try await HTTP.upload(collector, valid)
        #expect(after.status == 201)
    }

    func manifestDated(_ createdAt: String) throws -> Data {
        let log = Data("line\n".utf8)
        let manifest = BundleManifest(
            app: .init(name: "shop"), host: "h",
            entries: [.init(path: "logs/a.log", kind: .log, size: Int64(log.count), sha256: BundleArchive.sha256(log))])
        var json = try #require(try JSONSerialization.jsonObject(with: manifest.encoded()) as? [String: Any])
        json["createdAt"] = createdAt
        return try BundleArchive.zip([
            ("manifest.json", try JSONSerialization.data(withJSONObject: json)), ("logs/a.log", log),
        ])
    }

    func lyingManifest() throws -> Data {
        let log = Data("real contents\n".utf8)
        let manifest = BundleManifest(
            app: .init(name: "shop"), host: "h",
            entries: [
                .init(path: "logs/a.log", kind: .log, size: Int64(log.count), sha256: String(repeating: "0", count: 64))
            ])
        return try BundleArchive.zip([("manifest.json", try manifest.encoded()), ("logs/a.log", log)])
    }

    func invalidReport() throws -> Data {
        let report = Data(#"{"formatVersion": 1, "kind": "crash"}"#.utf8)
        let manifest = BundleManifest(
            app: .init(name: "shop"), host: "h",
            entries: [
                .init(
                    path: "reports/x.json", kind: .report, size: Int64(report.count),
                    sha256: BundleArchive.sha256(report))
            ])
        return try BundleArchive.zip([("manifest.json", try manifest.encoded()), ("reports/x.json", report)])
    }

    /// The attack that took a server from 55 MB to 2.2 GB: a 20 KB body whose manifest names one
    /// 200 KB report 10,000 times, each listing decoded and kept again.
    func repeatedListing() throws -> Data {
        var report = Reports.crash(functions: ["shop.f() -> ()"])
        report.metadata = ["padding": String(repeating: "p", count: 200_000)]
        let data = try CrashReport.makeEncoder().encode(report)
        let entry = BundleManifest.Entry(
            path: "reports/x.json", kind: .report, size: Int64(data.count), sha256: BundleArchive.sha256(data))
        let manifest = BundleManifest(
            app: .init(name: "shop"), host: "h", entries: Array(repeating: entry, count: 10_000))
        // Unlisted noise keeps the body's inflation ratio below the ratio limit, as the real attack's was.
        return try BundleArchive.zip(
            [("manifest.json", try manifest.encoded()), ("reports/x.json", data), ("logs/noise.log", noise(40 << 10))])
    }

    /// Reports each under the per-report limit whose sum passes the per-bundle one (2 MiB here).
    func manyLargeReports() throws -> Data {
        var entries: [BundleManifest.Entry] = []
        var files: [(String, Data)] = []
        for index in 0..<12 {
            var report = Reports.crash(functions: ["shop.f() -> ()"])
            report.metadata = ["padding": String(repeating: "p", count: 200_000)]
            let data = try CrashReport.makeEncoder().encode(report)
            entries.append(
                .init(
                    path: "reports/\(index).json", kind: .report, size: Int64(data.count),
                    sha256: BundleArchive.sha256(data)))
            files.append(("reports/\(index).json", data))
        }
        let manifest = BundleManifest(app: .init(name: "shop"), host: "h", entries: entries)
        return try BundleArchive.zip(
            [("manifest.json", try manifest.encoded())] + files + [("logs/noise.log", noise(64 << 10))])
    }

    /// Bytes that do not compress (a fixed-seed generator: the corpus is the same every run).
    func noise(_ count: Int) -> Data {
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        return Data(
            (0..<count).map { _ in
                state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
                return UInt8(truncatingIfNeeded: state >> 33)
            })
    }

    /// Each entry is under the per-entry limit, but together they inflate far more than 200× the body.
    func ratioOnlyBomb() throws -> Data {
        let zeros = Data(count: 1 << 20)
        return try BundleArchive.zip((0..<40).map { ("logs/\($0).log", zeros) })
    }
}
