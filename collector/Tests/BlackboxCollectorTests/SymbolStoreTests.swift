import BlackboxSymbols
import BlackboxTestSupport
import CollectorTestSupport
import Foundation
import GRDB
import Testing

@testable import BlackboxCollector

/// A small C program built with debug info the way a release is archived: `app` stripped of its
/// debug info with a debuglink, `app.debug` the separate debug file, `full` the unstripped binary.
struct SymbolFixture: Sendable {
    let scratch = TemporaryDirectory()
    var directory: String { scratch.path }
    var app: String { "\(directory)/app" }
    var debugFile: String { "\(directory)/app.debug" }
    var full: String { "\(directory)/full" }
    let buildID: String

    init() throws {
        scratch.write(
            "app.c",
            """
            #include <stdlib.h>
            __attribute__((noinline)) int checkout(int items) { if (items > 3) abort(); return items * 2; }
            int main(int argc, char **argv) { return checkout(argc); }
            """)
        let steps: [(String, [String])] = [
            ("/usr/bin/env", ["clang", "-g", "-O1", "-Wl,--build-id", "-o", "full", "app.c"]),
            ("/usr/bin/objcopy", ["--only-keep-debug", "full", "app.debug"]),
            ("/usr/bin/objcopy", ["--strip-debug", "--add-gnu-debuglink=app.debug", "full", "app"]),
        ]
        // Errors thrown, not recorded: this runs on a thread of its own (`make`), outside the test.
        struct BuildFailed: Error, CustomStringConvertible { var description: String }
        for (tool, arguments) in steps where try run(tool, arguments, in: scratch.path) != 0 {
            throw BuildFailed(description: "\(tool) \(arguments) failed")
        }
        guard let buildID = ELFBuildID.read(path: "\(scratch.path)/full") else {
            throw BuildFailed(description: "no build-id in the fixture")
        }
        self.buildID = buildID
    }

    func remove() { scratch.remove() }

    /// Built on a thread of its own: clang and objcopy waited for on one of the test process's two
    /// cooperative threads held up every test running in parallel (servers, sleeps, browsers).
    static func make() async throws -> SymbolFixture {
        try await offThePool { try SymbolFixture() }
    }
}

@Suite("Symbol store: upload, validation, debuginfod")
struct SymbolStoreTests {
    /// A symbols key of the collector's first project.
    static func symbolsKey(_ collector: TestCollector) async throws -> String {
        let project = try #require(try await collector.server.store.projects().first)
        let secret = "bbx_symbols_\(UUID().uuidString)"
        _ = try await collector.server.store.createKey(projectID: project.id, kind: .symbols, secret: secret)
        return secret
    }

    static func put(
        _ collector: TestCollector, buildID: String, name: String?, body: Data, token: String,
        encoding: String? = nil
    ) async throws -> HTTPResult {
        var path = "/api/v1/symbols/\(buildID)"
        if let name {
            path += "?name=" + (name.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")
        }
        var headers = [("Authorization", "Bearer \(token)")]
        if let encoding { headers.append(("Content-Encoding", encoding)) }
        return try await HTTP.request(collector.baseURL + path, method: .PUT, headers: headers, body: body)
    }

    static func gzip(_ data: Data, level: Int = 1, in scratch: TemporaryDirectory) throws -> Data {
        let path = scratch.write("body-\(UUID().uuidString)", data)
        #expect(try run("/bin/gzip", ["-f", "-\(level)", path], in: scratch.path) == 0)
        return try Data(contentsOf: URL(fileURLWithPath: path + ".gz"))
    }

    /// `debuginfod-find` (elfutils), with the token as a header and a cache of its own.
    static func debuginfodFind(_ collector: TestCollector, _ what: String, _ buildID: String, token: String)
        async throws
        -> Tool.Result
    {
        let scratch = TemporaryDirectory()
        let headers = scratch.write("headers", "Authorization: Bearer \(token)\n")
        let environment = [
            "DEBUGINFOD_URLS": collector.baseURL, "DEBUGINFOD_HEADERS_FILE": headers,
            "DEBUGINFOD_CACHE_PATH": "\(scratch.path)/cache", "DEBUGINFOD_TIMEOUT": "30",
        ]
        var result = try await Tool.Running("/usr/bin/debuginfod-find", [what, buildID], environment: environment)
            .wait()
        // The path it prints is in the cache, which goes with the scratch directory: keep the bytes.
        let path = result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        if result.status == 0, let data = FileManager.default.contents(atPath: path) {
            result.stdout = data.base64EncodedString()
        }
        scratch.remove()
        return result
    }

    @Test("blackbox symbols upload sends the debug file once; debuginfod-find fetches it with the token")
    func uploadAndFetch() async throws {
        let fixture = try await SymbolFixture.make()
        defer { fixture.remove() }
        let collector = try await TestCollector.start()
        let key = try await Self.symbolsKey(collector)
        let arguments = ["symbols", "upload", "--server", collector.baseURL, fixture.app, fixture.debugFile]

        let first = try await Tool.run("blackbox", arguments, environment: ["BLACKBOX_SYMBOLS_TOKEN": key])
        #expect(first.status == 0, "\(first.stderr)")
        #expect(first.stdout.contains("\(fixture.buildID)  \(fixture.app)  no debug info"), "\(first.stdout)")
        #expect(first.stdout.contains("\(fixture.buildID)  \(fixture.debugFile)  uploaded"), "\(first.stdout)")
        let second = try await Tool.run("blackbox", arguments + ["--token", key])
        #expect(second.status == 0, "\(second.stderr)")
        #expect(second.stdout.contains("\(fixture.debugFile)  already there"), "\(second.stdout)")

        let listed = try await HTTP.get(collector, "/api/v1/symbols").json["items"] as? [[String: Any]] ?? []
        #expect(listed.count == 1)
        #expect(listed.first?["buildID"] as? String == fixture.buildID)
        #expect(listed.first?["fileName"] as? String == "app.debug")
        #expect(listed.first?["hasDebugInfo"] as? Bool == true)
        #expect(listed.first?["size"] as? Int == (try fileSize(fixture.debugFile)))

        // A real debuginfod client gets exactly the debug file; wrong credentials get nothing.
        let expected = try Data(contentsOf: URL(fileURLWithPath: fixture.debugFile)).base64EncodedString()
        for token in [key, collector.adminToken] {
            let fetched = try await Self.debuginfodFind(collector, "debuginfo", fixture.buildID, token: token)
            #expect(fetched.status == 0, "\(fetched.stderr)")
            #expect(fetched.stdout == expected)
        }
        for token in [collector.ingestKey, "bbx_wrong"] {
            #expect(try await Self.debuginfodFind(collector, "debuginfo", fixture.buildID, token: token).status != 0)
        }
        // No file with code for this build-id yet, and none at all for an unknown one.
        #expect(try await Self.debuginfodFind(collector, "executable", fixture.buildID, token: key).status != 0)
        #expect(try await HTTP.get(collector, "/buildid/\(fixture.buildID)/executable", token: key).status == 404)
        #expect(try await HTTP.get(collector, "/buildid/\(String(repeating: "ab", count: 20))/debuginfo").status == 404)
        #expect(
            try await HTTP.get(collector, "/buildid/\(fixture.buildID)/debuginfo", token: "bbx_wrong").status == 401)
        let asIngest = try await HTTP.get(
            collector, "/buildid/\(fixture.buildID)/debuginfo", token: collector.ingestKey)
        #expect(asIngest.status == 403 && asIngest.json["error"] as? String == "forbidden")

        // The unstripped binary is both: it becomes the executable.
        let full = try Data(contentsOf: URL(fileURLWithPath: fixture.full))
        let stored = try await Self.put(
            collector, buildID: fixture.buildID, name: "full", body: try Self.gzip(full, in: fixture.scratch),
            token: key, encoding: "gzip")
        #expect(stored.status == 201, "\(stored.text)")
        let executable = try await Self.debuginfodFind(collector, "executable", fixture.buildID, token: key)
        #expect(executable.status == 0 && executable.stdout == full.base64EncodedString())
        await collector.stop()
    }

    @Test("keys keep to their jobs: an ingest key cannot touch symbols, a symbols key cannot upload bundles")
    func credentials() async throws {
        let fixture = try await SymbolFixture.make()
        defer { fixture.remove() }
        let collector = try await TestCollector.start()
        let key = try await Self.symbolsKey(collector)
        let debugFile = try Data(contentsOf: URL(fileURLWithPath: fixture.debugFile))
        let refused = try await Self.put(
            collector, buildID: fixture.buildID, name: "app.debug", body: debugFile, token: collector.ingestKey)
        #expect(refused.status == 403 && refused.json["error"] as? String == "forbidden")
        let check = try await HTTP.request(
            collector.baseURL + "/api/v1/symbols/check", method: .POST,
            headers: [("Authorization", "Bearer \(collector.ingestKey)")], body: Data(#"{"buildIds":[]}"#.utf8))
        #expect(check.status == 403)
        let unauthenticated = try await Self.put(
            collector, buildID: fixture.buildID, name: "app.debug", body: debugFile, token: "")
        #expect(unauthenticated.status == 401)
        let bundle = try await HTTP.upload(collector, Data("PK".utf8), credential: .secret(key))
        #expect(bundle.status == 403 && bundle.json["error"] as? String == "forbidden")
        #expect((try await HTTP.get(collector, "/api/v1/symbols").json["items"] as? [Any])?.count == 0)
        // The CLI says why and exits 4 (the token), sending nothing.
        let cli = try await Tool.run(
            "blackbox",
            ["symbols", "upload", "--server", collector.baseURL, "--token", collector.ingestKey, fixture.debugFile])
        #expect(cli.status == 4 && cli.stderr.contains("forbidden"), "\(cli.stderr)")
        await collector.stop()
    }

    @Test("hostile symbol uploads are refused with their reason; nothing is stored; the server keeps serving")
    func hostileUploads() async throws {
        let fixture = try await SymbolFixture.make()
        defer { fixture.remove() }
        let collector = try await TestCollector.start { configuration in
            configuration.limits.maxSymbolFileBytes = 8 << 20
        }
        let key = try await Self.symbolsKey(collector)
        let scratch = fixture.scratch
        let debugFile = try Data(contentsOf: URL(fileURLWithPath: fixture.debugFile))
        let otherID = String(repeating: "0f", count: 20)
        // A binary with code but neither symbols nor debug info, and one without a build-id.
        #expect(try run("/usr/bin/objcopy", ["--strip-all", "full", "bare"], in: scratch.path) == 0)
        #expect(try run("/usr/bin/objcopy", ["--only-keep-debug", "bare", "bare.debug"], in: scratch.path) == 0)
        #expect(
            try run(
                "/usr/bin/env", ["clang", "-g", "-Wl,--build-id=none", "-o", "anonymous", "app.c"], in: scratch.path)
                == 0)
        func contents(_ name: String) throws -> Data {
            try Data(contentsOf: URL(fileURLWithPath: "\(scratch.path)/\(name)"))
        }
        var generator = SystemRandomNumberGenerator()
        let noise = Data((0..<(9 << 17)).flatMap { _ in withUnsafeBytes(of: generator.next() as UInt64, Array.init) })
        let hexText = Data(noise.prefix(5 << 20).map { UInt8(ascii: "a") + $0 % 6 })
        let gzippedDebugFile = try Self.gzip(debugFile, in: scratch)

        struct Case {
            var label: String
            var buildID: String
            var name: String? = "app.debug"
            var body: Data
            var encoding: String? = nil
            var status: Int
            var code: String
        }
        let cases: [Case] = [
            Case(label: "not ELF", buildID: otherID, body: Data("just text\n".utf8), status: 422, code: "not_elf"),
            Case(
                label: "claimed build-id differs", buildID: otherID, body: debugFile, status: 422,
                code: "build_id_mismatch"),
            Case(
                label: "no build-id at all", buildID: otherID, body: try contents("anonymous"), status: 422,
                code: "build_id_mismatch"),
            Case(
                label: "nothing to symbolicate with", buildID: fixture.buildID, body: try contents("bare.debug"),
                status: 422, code: "no_symbols"),
            Case(
                label: "over the size limit", buildID: fixture.buildID, body: noise, status: 413, code: "body_too_large"
            ),
            Case(
                label: "compression bomb", buildID: fixture.buildID,
                body: try Self.gzip(Data(count: 7 << 20), level: 9, in: scratch),
                encoding: "gzip", status: 422, code: "compression_ratio"),
            Case(
                label: "inflates past the size limit", buildID: fixture.buildID,
                body: try Self.gzip(hexText + hexText, in: scratch), encoding: "gzip", status: 422,
                code: "uncompressed_too_large"),
            Case(
                label: "not gzip", buildID: fixture.buildID, body: debugFile, encoding: "gzip", status: 422,
                code: "corrupt_gzip"),
            Case(
                label: "truncated gzip", buildID: fixture.buildID,
                body: gzippedDebugFile.prefix(gzippedDebugFile.count / 2),
                encoding: "gzip", status: 422, code: "corrupt_gzip"),
            Case(
                label: "unknown encoding", buildID: fixture.buildID, body: debugFile, encoding: "br", status: 415,
                code: "unsupported_encoding"),
            Case(label: "empty body", buildID: fixture.buildID, body: Data(), status: 400, code: "empty_body"),
            Case(
                label: "no name", buildID: fixture.buildID, name: nil, body: debugFile, status: 400,
                code: "invalid_file_name"),
            Case(
                label: "a path", buildID: fixture.buildID, name: "../../etc/passwd", body: debugFile, status: 400,
                code: "invalid_file_name"),
            Case(
                label: "a control character", buildID: fixture.buildID, name: "app\u{1}.debug", body: debugFile,
                status: 400, code: "invalid_file_name"),
            Case(
                label: "a long name", buildID: fixture.buildID, name: String(repeating: "n", count: 300),
                body: debugFile, status: 400, code: "invalid_file_name"),
            Case(
                label: "dots", buildID: fixture.buildID, name: "..", body: debugFile, status: 400,
                code: "invalid_file_name"),
            Case(
                label: "upper-case build-id", buildID: fixture.buildID.uppercased(), body: debugFile, status: 400,
                code: "invalid_build_id"),
            Case(label: "odd-length build-id", buildID: "abc", body: debugFile, status: 400, code: "invalid_build_id"),
            Case(
                label: "long build-id", buildID: String(repeating: "ab", count: 65), body: debugFile, status: 400,
                code: "invalid_build_id"),
        ]
        for hostile in cases {
            let answer = try await Self.put(
                collector, buildID: hostile.buildID, name: hostile.name, body: hostile.body, token: key,
                encoding: hostile.encoding)
            #expect(answer.status == hostile.status, "\(hostile.label): \(answer.status) \(answer.text)")
            #expect(answer.json["error"] as? String == hostile.code, "\(hostile.label): \(answer.text)")
            #expect(try await HTTP.get(collector, "/health").status == 200)
        }
        let check = try await HTTP.request(
            collector.baseURL + "/api/v1/symbols/check", method: .POST, headers: [("Authorization", "Bearer \(key)")],
            body: Data(#"{"buildIds":["xyz"]}"#.utf8))
        #expect(check.status == 400 && check.json["error"] as? String == "invalid_build_id")

        // Nothing was stored: no record, no file, no temporary leftover.
        #expect((try await HTTP.get(collector, "/api/v1/symbols").json["items"] as? [Any])?.count == 0)
        let configuration = collector.server.configuration
        #expect(Self.regularFiles(under: configuration.symbolDirectory).isEmpty)
        #expect(Self.regularFiles(under: configuration.temporaryDirectory).isEmpty)

        // And an honest upload still goes through, compressed or not, once.
        let stored = try await Self.put(
            collector, buildID: fixture.buildID, name: "app.debug", body: gzippedDebugFile, token: key, encoding: "gzip"
        )
        #expect(stored.status == 201, "\(stored.text)")
        let repeated = try await Self.put(
            collector, buildID: fixture.buildID, name: "app.debug", body: debugFile, token: key)
        #expect(repeated.status == 200 && repeated.json["duplicate"] as? Bool == true, "\(repeated.text)")
        #expect(Self.regularFiles(under: configuration.symbolDirectory).count == 1)
        #expect(Self.regularFiles(under: configuration.temporaryDirectory).isEmpty)
        await collector.stop()
    }

    @Test("without llvm-symbolizer the collector keeps working and says so: /ready, /metrics, the symbols page")
    func withoutSymbolizer() async throws {
        let collector = try await TestCollector.start { $0.symbolizerPath = nil }
        let ready = try await HTTP.request(collector.baseURL + "/ready")
        #expect(ready.status == 200 && ready.text.contains("symbolizer: missing"), "\(ready.text)")
        let metrics = try await HTTP.request(collector.baseURL + "/metrics").text
        #expect(metrics.contains("blackbox_symbolizer_available_bool 0"), "\(metrics)")
        let report = Reports.crash(functions: ["shop.checkout() -> ()"])
        let bundle = try BundleArchive.make(app: report.app, host: "h", reports: [report], logs: [])
        #expect(try await HTTP.upload(collector, bundle).status == 201)
        #expect(await collector.server.symbolicatePending() == 0)
        #expect(try await collector.server.store.pendingSymbolicationCount() == 1, "it waits for a symbolizer")
        let groups = try await HTTP.get(collector, "/api/v1/groups").json["items"] as? [[String: Any]] ?? []
        let reportID = try #require(groups.first?["latestReportID"] as? Int)
        let state = try await HTTP.get(collector, "/api/v1/reports/\(reportID)/symbolication").json
        #expect(state["state"] as? String == "pending" && state["attempts"] as? Int == 0, "\(state)")
        let page = try await HTTP.get(collector, "/reports/\(reportID)").text
        #expect(page.contains("Symbolication here") && page.contains("waiting"))
        await collector.stop()

        let equipped = try await TestCollector.start()
        let answer = try await HTTP.request(equipped.baseURL + "/ready").text
        #expect(answer.hasPrefix("ready\nsymbolizer: /") && answer.contains("llvm-symbolizer"), "\(answer)")
        #expect(
            try await HTTP.request(equipped.baseURL + "/metrics").text.contains("blackbox_symbolizer_available_bool 1"))
        await equipped.stop()
    }

    static func regularFiles(under directory: String) -> [String] {
        let enumerator = FileManager.default.enumerator(atPath: directory)
        var files: [String] = []
        while let name = enumerator?.nextObject() as? String {
            var isDirectory: ObjCBool = false
            if FileManager.default.fileExists(atPath: "\(directory)/\(name)", isDirectory: &isDirectory),
                !isDirectory.boolValue
            {
                files.append(name)
            }
        }
        return files
    }

    @Test("the symbols migration keeps the keys and sessions a SQLite database had")
    func migrationKeepsKeys() async throws {
        let scratch = TemporaryDirectory()
        defer { scratch.remove() }
        try FileManager.default.createDirectory(atPath: scratch.path, withIntermediateDirectories: true)
        let store = try SQLiteStore(path: "\(scratch.path)/collector.sqlite")
        try SQLiteSchema.migrator.migrate(store.pool, upTo: "v2-sessions")
        try await store.pool.write { db in
            try db.execute(sql: "INSERT INTO projects (id, name, created_at) VALUES (1, 'shop', 0)")
            try db.execute(
                sql: """
                    INSERT INTO api_keys (id, project_id, kind, secret_hash, prefix, created_at)
                    VALUES (7, 1, 'admin', ?, 'bbx_admi', 0)
                    """, arguments: [APIKey.hash("bbx_admin_old")])
            try db.execute(
                sql:
                    "INSERT INTO sessions (token_hash, key_id, kind, created_at, expires_at) VALUES ('t', 7, 'session', 0, ?)",
                arguments: [Date().timeIntervalSince1970 + 3600])
        }
        try await store.migrate()
        #expect(try await store.authenticate(secret: "bbx_admin_old")?.id == 7)
        #expect(try await store.session(tokenHash: "t", now: Date())?.id == 7)
        let symbols = try await store.createKey(projectID: 1, kind: .symbols, secret: "bbx_symbols_new")
        #expect(try await store.authenticate(secret: "bbx_symbols_new")?.id == symbols.id)
        let violations = try await store.pool.read { db in try db.foreignKeyViolations().next() }
        #expect(violations == nil)
    }
}
