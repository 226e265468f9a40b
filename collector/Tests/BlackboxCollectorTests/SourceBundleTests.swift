import BlackboxSymbols
import BlackboxTestSupport
import Foundation
import Testing
import ZIPFoundation

@testable import BlackboxCollector

/// Issue 53, item 5: source bundles in sentry-cli's layout, stored by build-id, served on debuginfod's
/// `source` route and read for the report page, against the real peers: `sentry-cli difutil
/// bundle-sources` and `debug-files upload --include-sources`, and elfutils' `debuginfod-find source`.
@Suite("Source bundles: sentry-cli's layout, debuginfod's source route")
struct SourceBundleTests {
    static var debugCrashChild: String { "\(Tool.binDirectory)/blackbox-crash-child" }

    /// `sentry-cli difutil bundle-sources`: the bundle it writes (with its `SYSB` header) and the
    /// absolute paths its manifest names.
    static func sentryBundle(of binary: String, in scratch: TemporaryDirectory) async throws -> (
        path: String, sources: Set<String>
    ) {
        let made = try await Tool.Running(
            SentryCLITests.sentryCLI, ["difutil", "bundle-sources", "--output", scratch.path, binary],
            environment: ["SENTRY_LOG_LEVEL": "warn", "HOME": NSTemporaryDirectory()]
        ).wait()
        try #require(made.status == 0, "\(made.stdout)\(made.stderr)")
        let path = made.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        let bundle = try SourceBundle(path: path)
        return (path, Set(bundle.manifest.files.values.compactMap(\.path)))
    }

    @Test(
        "the DWARF line tables name every source sentry-cli bundles, in a debug and a release build",
        arguments: ["debug", "release"])
    func sameSourcesAsSentryCLI(build: String) async throws {
        let binary =
            build == "debug"
            ? Self.debugCrashChild : "\(ProductionSymbolicationTests.releaseBinDirectory)/blackbox-crash-child"
        let scratch = TemporaryDirectory()
        defer { scratch.remove() }
        let (_, bundled) = try await Self.sentryBundle(of: binary, in: scratch)
        #expect(bundled.count > 20, "\(bundled)")
        let named = try DWARFSourceFiles.read(path: binary)
        // sentry-cli bundles the named files this machine has; so does `--sources`.
        let onDisk = Set(named.filter { FileManager.default.fileExists(atPath: $0) })
        #expect(
            onDisk == bundled,
            "only ours: \(onDisk.subtracting(bundled)); only sentry-cli's: \(bundled.subtracting(onDisk))")
        #expect(named.contains { $0.hasSuffix("/Sources/blackbox-crash-child/Triggers.swift") })
    }

    @Test("a damaged line table yields what was read before the damage, and never traps")
    func damagedLineTables() throws {
        let scratch = TemporaryDirectory()
        defer { scratch.remove() }
        var bytes = try #require(FileManager.default.contents(atPath: Self.debugCrashChild))
        let whole = try DWARFSourceFiles.read(path: Self.debugCrashChild)
        var generator = SystemRandomNumberGenerator()
        // Overwrite random stretches: each read must end (with some names or none) without a trap.
        for round in 0..<40 {
            var damaged = bytes
            for _ in 0..<64 {
                let at = Int.random(in: 0..<damaged.count, using: &generator)
                damaged[at] = UInt8.random(in: 0...255, using: &generator)
            }
            let path = scratch.write("damaged-\(round)", damaged)
            let names = (try? DWARFSourceFiles.read(path: path)) ?? []
            #expect(names.count <= whole.count + 1_000)
        }
        // Cut in half: the section headers (at the end) are gone.
        bytes.removeLast(bytes.count / 2)
        #expect(throws: DWARFSourceFiles.Failure.noLineTables) {
            try DWARFSourceFiles.read(path: scratch.write("cut", bytes))
        }
        #expect(throws: DWARFSourceFiles.Failure.notELF) { try DWARFSourceFiles.read(path: scratch.write("x", "text")) }
    }

    /// `debuginfod-find source BUILDID PATH` with the token as a header: the file's bytes, or the result.
    static func debuginfodSource(_ collector: TestCollector, _ buildID: String, _ path: String, token: String)
        async throws -> (Tool.Result, Data?)
    {
        let scratch = TemporaryDirectory()
        defer { scratch.remove() }
        let headers = scratch.write("headers", "Authorization: Bearer \(token)\n")
        let result = try await Tool.Running(
            "/usr/bin/debuginfod-find", ["source", buildID, path],
            environment: [
                "DEBUGINFOD_URLS": collector.baseURL, "DEBUGINFOD_HEADERS_FILE": headers,
                "DEBUGINFOD_CACHE_PATH": "\(scratch.path)/cache", "DEBUGINFOD_TIMEOUT": "30",
            ]
        ).wait()
        let cached = result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        return (result, result.status == 0 ? FileManager.default.contents(atPath: cached) : nil)
    }

    @Test("sentry-cli's bundle stored by build-id; debuginfod-find fetches a source by its path, spaces and all")
    func servedToDebuginfod() async throws {
        let scratch = TemporaryDirectory()
        defer { scratch.remove() }
        let buildID = try #require(ELFBuildID.read(path: Self.debugCrashChild))
        let (bundlePath, sources) = try await Self.sentryBundle(of: Self.debugCrashChild, in: scratch)
        let bundle = try Data(contentsOf: URL(fileURLWithPath: bundlePath))
        #expect(bundle.prefix(4) == Data("SYSB".utf8))

        let collector = try await TestCollector.start()
        defer { Task { await collector.stop() } }
        let token = try await SymbolStoreTests.symbolsKey(collector)
        let stored = try await SymbolStoreTests.put(
            collector, buildID: buildID, name: "blackbox-crash-child.src.zip", body: bundle, token: token)
        #expect(stored.status == 201, "\(stored.text)")
        let file = stored.json["file"] as? [String: Any]
        #expect(file?["hasSources"] as? Bool == true && file?["hasDebugInfo"] as? Bool == false, "\(stored.text)")
        // The check sentry-cli and `blackbox symbols upload` ask still wants the debug info.
        let check = try await HTTP.request(
            collector.baseURL + "/api/v1/symbols/check", method: .POST,
            headers: [("Authorization", "Bearer \(token)")], body: Data(#"{"buildIds": ["\#(buildID)"]}"#.utf8))
        #expect(check.json["missing"] as? [String] == [buildID], "\(check.text)")

        for path in [
            try #require(sources.first { $0.hasSuffix("/Sources/blackbox-crash-child/Triggers.swift") }),
            try #require(sources.first { $0.contains(" ") }, "a source with a space in its path"),
        ] {
            let (result, served) = try await Self.debuginfodSource(collector, buildID, path, token: token)
            #expect(result.status == 0, "\(path): \(result.stderr)")
            #expect(served == FileManager.default.contents(atPath: path), "\(path)")
        }
        let (unknown, _) = try await Self.debuginfodSource(collector, buildID, "/etc/passwd", token: token)
        #expect(unknown.status != 0)
        let traversal = try await HTTP.request(
            collector.baseURL + "/buildid/\(buildID)/source/..%2F..%2Fetc%2Fpasswd",
            headers: [("Authorization", "Bearer \(token)")])
        #expect(traversal.status == 404, "\(traversal.text)")
        let noToken = try await HTTP.request(
            collector.baseURL + "/buildid/\(buildID)/source\(sources.sorted()[0])")
        #expect(noToken.status == 401)

        // The same bundle again is a duplicate; another one for the build-id is refused (the first
        // wins, as for debug files); the symbols list says what it holds.
        let again = try await SymbolStoreTests.put(
            collector, buildID: buildID, name: "again.src.zip", body: bundle, token: token)
        #expect(again.status == 200 && again.json["duplicate"] as? Bool == true, "\(again.text)")
        let other = try Self.bundle(
            ["files/a.swift": ("/src/a.swift", Data("let a = 1\n".utf8))], codeID: buildID, in: scratch)
        let refused = try await SymbolStoreTests.put(
            collector, buildID: buildID, name: "other.src.zip", body: other, token: token)
        #expect(refused.status == 409, "\(refused.text)")
        let page = try await HTTP.get(collector, "/symbols").text
        #expect(page.contains("sources"), "\(page)")
    }

    /// A bundle in `blackbox symbols upload --sources`'s layout (no `SYSB` header).
    static func bundle(
        _ files: [String: (path: String, contents: Data)], codeID: String?, manifest: Data? = nil,
        in scratch: TemporaryDirectory
    ) throws -> Data {
        let path = "\(scratch.path)/bundle-\(UUID().uuidString).zip"
        let archive = try Archive(url: URL(fileURLWithPath: path), accessMode: .create)
        var listed: [String: [String: String]] = [:]
        for (name, file) in files {
            try archive.addEntry(
                with: name, type: .file, uncompressedSize: Int64(file.contents.count), compressionMethod: .deflate,
                provider: { position, size in file.contents.subdata(in: Int(position)..<Int(position) + size) })
            listed[name] = ["type": "source", "path": file.path]
        }
        var object: [String: Any] = ["files": listed]
        if let codeID { object["code_id"] = codeID }
        let json = try manifest ?? JSONSerialization.data(withJSONObject: object)
        try archive.addEntry(
            with: "manifest.json", type: .file, uncompressedSize: Int64(json.count), compressionMethod: .deflate,
            provider: { position, size in json.subdata(in: Int(position)..<Int(position) + size) })
        return try Data(contentsOf: URL(fileURLWithPath: path))
    }

    @Test("a bundle that is not one, names no source, claims another build-id or holds a bomb is refused or cut")
    func hostileBundles() async throws {
        let scratch = TemporaryDirectory()
        defer { scratch.remove() }
        let collector = try await TestCollector.start()
        defer { Task { await collector.stop() } }
        let token = try await SymbolStoreTests.symbolsKey(collector)
        let buildID = "ab" + String(repeating: "cd", count: 19)
        let source = ["files/a.swift": ("/src/a.swift", Data("let a = 1\n".utf8))]
        for (body, status, fragment) in [
            (Data("PK\u{3}\u{4}not a zip at all".utf8), 422, "not a zip"),
            (try Self.bundle(source, codeID: buildID, manifest: Data("[1]".utf8), in: scratch), 422, "manifest"),
            (try Self.bundle([:], codeID: buildID, in: scratch), 422, "names no source"),
            (try Self.bundle(source, codeID: "ee" + buildID.dropFirst(2), in: scratch), 422, "build-id"),
            (try Self.bundle(source, codeID: nil, in: scratch), 422, "build-id"),
        ] {
            let answer = try await SymbolStoreTests.put(
                collector, buildID: buildID, name: "x.src.zip", body: body, token: token)
            #expect(answer.status == status && answer.text.contains(fragment), "\(answer.status) \(answer.text)")
        }
        // A source that inflates past the limit is stored (the bundle is within its quota) but never
        // served or shown whole; the bundle's other sources are.
        let bomb = Data(repeating: 0x20, count: SourceBundle.maxSourceBytes + 1)
        let body = try Self.bundle(
            [
                "files/big.swift": ("/src/big.swift", bomb), "files/../../escape": ("/src/ok.swift", Data("ok\n".utf8)),
            ], codeID: buildID, in: scratch)
        #expect(body.count < 100_000)
        let stored = try await SymbolStoreTests.put(
            collector, buildID: buildID, name: "x.src.zip", body: body, token: token)
        #expect(stored.status == 201, "\(stored.text)")
        let big = try await HTTP.request(
            collector.baseURL + "/buildid/\(buildID)/source/src/big.swift",
            headers: [("Authorization", "Bearer \(token)")])
        #expect(big.status == 422 && big.text.contains("larger than"), "\(big.status) \(big.text.prefix(300))")
        // Found by the path the manifest gives it, whatever the entry's name.
        let ok = try await HTTP.request(
            collector.baseURL + "/buildid/\(buildID)/source/src/ok.swift",
            headers: [("Authorization", "Bearer \(token)")])
        #expect(ok.status == 200 && ok.text == "ok\n", "\(ok.status) \(ok.text)")
    }

    @Test("sentry-cli debug-files upload --include-sources sends a source bundle the collector stores and serves")
    func sentryCLIIncludeSources() async throws {
        let scratch = TemporaryDirectory()
        defer { scratch.remove() }
        let debugFile = "\(scratch.path)/blackbox-crash-child.debug"
        #expect(
            try run("/usr/bin/objcopy", ["--only-keep-debug", Self.debugCrashChild, debugFile], in: scratch.path) == 0)
        let buildID = try #require(ELFBuildID.read(path: debugFile))
        let collector = try await TestCollector.start()
        defer { Task { await collector.stop() } }
        let token = try await SymbolStoreTests.symbolsKey(collector)
        let upload = try await SentryCLITests.sentryCLI(
            collector, token: token,
            ["debug-files", "upload", "--include-sources", "--org", "blackbox", "--project", "default", debugFile])
        #expect(upload.status == 0, "\(upload.stdout)\(upload.stderr)")
        let listed = try await HTTP.get(collector, "/api/v1/symbols").json["items"] as? [[String: Any]] ?? []
        let kinds = listed.filter { $0["buildID"] as? String == buildID }.map { $0["hasSources"] as? Bool }
        #expect(kinds.sorted { ($0 ?? false) && !($1 ?? false) } == [true, false], "\(listed)")
        let triggers = try #require(
            try DWARFSourceFiles.read(path: debugFile).first { $0.hasSuffix("/blackbox-crash-child/Triggers.swift") })
        let (result, served) = try await Self.debuginfodSource(collector, buildID, triggers, token: token)
        #expect(result.status == 0 && served == FileManager.default.contents(atPath: triggers), "\(result.stderr)")
    }
}
