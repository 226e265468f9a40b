import BlackboxSymbols
import BlackboxTestSupport
import CollectorTestSupport
import Crypto
import Foundation
import Testing

@testable import BlackboxCollector

/// Issue 34, item 5: the real `sentry-cli` (PyPI wheel, pinned) uploads debug files into the symbol
/// store through the chunk-upload and assemble endpoints.
@Suite("Sentry protocol: sentry-cli debug-files upload")
struct SentryCLITests {
    static var sentryCLI: String {
        URL(fileURLWithPath: PythonPeers.python).deletingLastPathComponent().appendingPathComponent("sentry-cli").path
    }

    static func sentryCLI(_ collector: TestCollector, token: String, _ arguments: [String]) async throws
        -> Tool.Result
    {
        try #require(FileManager.default.isExecutableFile(atPath: sentryCLI), "no sentry-cli: run `make python-peers`")
        return try await Tool.Running(
            sentryCLI, ["--url", collector.baseURL, "--auth-token", token] + arguments,
            environment: ["SENTRY_LOG_LEVEL": "warn", "HOME": NSTemporaryDirectory()]
        ).wait()
    }

    @Test("a debug file split from a built binary: uploaded, listed with sentry-cli's ids, stored once")
    func debugFilesUpload() async throws {
        let scratch = TemporaryDirectory()
        defer { scratch.remove() }
        let binary = "\(Tool.binDirectory)/blackbox-crash-child"
        let debugFile = "\(scratch.path)/blackbox-crash-child.debug"
        #expect(try run("/usr/bin/objcopy", ["--only-keep-debug", binary, debugFile], in: scratch.path) == 0)
        let buildID = try #require(ELFBuildID.read(path: debugFile))

        let collector = try await TestCollector.start()
        defer { Task { await collector.stop() } }
        let token = try await SymbolStoreTests.symbolsKey(collector)
        let upload = try await Self.sentryCLI(
            collector, token: token, ["debug-files", "upload", "--org", "blackbox", "--project", "default", debugFile])
        #expect(upload.status == 0, "\(upload.stdout)\(upload.stderr)")
        #expect(upload.stdout.contains("Uploaded 1 missing debug information file"), "\(upload.stdout)")

        let listed = try await HTTP.get(collector, "/api/v1/symbols").json["items"] as? [[String: Any]] ?? []
        let file = try #require(listed.first { $0["buildID"] as? String == buildID }, "\(listed)")
        #expect(file["fileName"] as? String == "blackbox-crash-child.debug")
        #expect(file["hasDebugInfo"] as? Bool == true)
        // sentry-cli and the collector name the file alike.
        let check = try await Self.sentryCLI(collector, token: token, ["debug-files", "check", debugFile])
        #expect(check.stdout.contains("Debug ID: \(try #require(file["debugID"] as? String))"), "\(check.stdout)")
        #expect(check.stdout.contains("Code ID:  \(buildID)"), "\(check.stdout)")

        // The same file again: known at the first assemble call, nothing sent, nothing stored twice.
        let again = try await Self.sentryCLI(
            collector, token: token, ["debug-files", "upload", "--org", "any-org", "--project", "1", debugFile])
        #expect(again.status == 0 && again.stdout.contains("Nothing to upload"), "\(again.stdout)\(again.stderr)")
        #expect((try await HTTP.get(collector, "/api/v1/symbols").json["items"] as? [Any])?.count == 1)

        // An ingest key may not upload symbols; another project's name is not found.
        let refused = try await Self.sentryCLI(
            collector, token: collector.ingestKey,
            ["debug-files", "upload", "--org", "blackbox", "--project", "1", binary])
        #expect(refused.status != 0, "\(refused.stdout)")
        let settings = try await HTTP.request(
            collector.baseURL + "/api/0/organizations/blackbox/chunk-upload/",
            headers: [("Authorization", "Bearer \(collector.ingestKey)")])
        #expect(settings.status == 403, "\(settings.text)")
        let otherProject = try await HTTP.request(
            collector.baseURL + "/api/0/projects/blackbox/nope/files/difs/assemble/", method: .POST,
            headers: [("Authorization", "Bearer \(token)")], body: Data("{}".utf8))
        #expect(otherProject.status == 404, "\(otherProject.text)")
    }

    @Test("chunks that do not match their names, and files that do not join to their checksum, are refused")
    func hostileChunks() async throws {
        let collector = try await TestCollector.start()
        defer { Task { await collector.stop() } }
        let token = try await SymbolStoreTests.symbolsKey(collector)
        let auth = ("Authorization", "Bearer \(token)")
        func form(_ name: String, _ bytes: Data, field: String = "file") -> (Data, String) {
            (ChunkForm.body([.init(name: name, bytes: bytes, field: field)]), ChunkForm.contentType)
        }
        let chunkURL = collector.baseURL + "/api/0/organizations/blackbox/chunk-upload/"
        let bytes = Data("not an ELF file".utf8)
        let sha1 = Insecure.SHA1.hash(data: bytes).lowercaseHex
        let (wrong, wrongType) = form(String(repeating: "0", count: 40), bytes)
        let mismatch = try await HTTP.request(
            chunkURL, method: .POST, headers: [auth, ("Content-Type", wrongType)], body: wrong)
        #expect(mismatch.status == 400 && mismatch.text.contains("invalid_form"), "\(mismatch.text)")
        let (notHex, notHexType) = form("../../etc/passwd", bytes)
        #expect(
            try await HTTP.request(
                chunkURL, method: .POST, headers: [auth, ("Content-Type", notHexType)], body: notHex
            )
            .status == 400)

        let (good, goodType) = form(sha1, bytes)
        let stored = try await HTTP.request(
            chunkURL, method: .POST, headers: [auth, ("Content-Type", goodType)], body: good)
        #expect(stored.status == 200, "\(stored.text)")
        func assemble(_ checksum: String) async throws -> [String: Any] {
            let request = try JSONSerialization.data(withJSONObject: [checksum: ["name": "x", "chunks": [sha1]]])
            let answer = try await HTTP.request(
                collector.baseURL + "/api/0/projects/blackbox/default/files/difs/assemble/", method: .POST,
                headers: [auth], body: request)
            return answer.json[checksum] as? [String: Any] ?? [:]
        }
        // Joined, they are not the file the request names.
        let misnamed = try await assemble(String(repeating: "1", count: 40))
        #expect(misnamed["state"] as? String == "error", "\(misnamed)")
        // Sent again (the chunk went with the failed attempt) and named right: not an ELF file.
        _ = try await HTTP.request(chunkURL, method: .POST, headers: [auth, ("Content-Type", goodType)], body: good)
        let notELF = try await assemble(sha1)
        #expect(notELF["state"] as? String == "error", "\(notELF)")
        #expect((notELF["detail"] as? String)?.contains("not a 64-bit little-endian ELF file") == true, "\(notELF)")
        #expect((try await HTTP.get(collector, "/api/v1/symbols").json["items"] as? [Any])?.isEmpty == true)
    }

    /// Security review 2026-11-27, findings 4 and 5, with the review's shapes.
    @Test("chunk requests past the advertised count, gzip bombs and repeated chunk names are refused")
    func boundedChunks() async throws {
        let collector = try await TestCollector.start()
        defer { Task { await collector.stop() } }
        let token = try await SymbolStoreTests.symbolsKey(collector)
        let auth = ("Authorization", "Bearer \(token)")
        func upload(_ body: Data) async throws -> HTTPResult {
            try await HTTP.request(
                collector.baseURL + "/api/0/organizations/blackbox/chunk-upload/", method: .POST,
                headers: [auth, ("Content-Type", ChunkForm.contentType)], body: body)
        }
        func chunk(_ text: String) -> ChunkForm.Part {
            let bytes = Data(text.utf8)
            return .init(name: Insecure.SHA1.hash(data: bytes).lowercaseHex, bytes: bytes)
        }
        // The settings say 4 chunks a request; a fifth part refuses the request.
        let five = try await upload(ChunkForm.body((0..<5).map { chunk("chunk \($0)") }))
        #expect(five.status == 400 && five.text.contains("at most 4 chunks"), "\(five.text)")
        #expect(try await upload(ChunkForm.body((0..<4).map { chunk("chunk \($0)") })).status == 200)

        // 8 MiB of zeros as a gzip part of ~8 KB: past the compression ratio.
        let scratch = TemporaryDirectory()
        defer { scratch.remove() }
        let zeros = Data(count: 8 << 20)
        let bomb = try await upload(
            ChunkForm.body([
                .init(
                    name: Insecure.SHA1.hash(data: zeros).lowercaseHex,
                    bytes: try SymbolStoreTests.gzip(zeros, level: 9, in: scratch), field: "file_gzip")
            ]))
        #expect(bomb.status == 422 && bomb.text.contains("compression_ratio"), "\(bomb.text)")

        // One kept chunk named twice by an assemble is refused before anything is joined.
        let repeated = chunk("chunk 0").name
        let request = try JSONSerialization.data(withJSONObject: [
            String(repeating: "2", count: 40): ["name": "x.debug", "chunks": [repeated, repeated]]
        ])
        let answer = try await HTTP.request(
            collector.baseURL + "/api/0/projects/blackbox/default/files/difs/assemble/", method: .POST,
            headers: [auth], body: request)
        let state = answer.json[String(repeating: "2", count: 40)] as? [String: Any] ?? [:]
        #expect(state["state"] as? String == "error", "\(answer.text)")
        #expect((state["detail"] as? String)?.contains("more than once") == true, "\(answer.text)")
        #expect(try await HTTP.request(collector.baseURL + "/health").status == 200)
    }
}

/// The chunk store's tally: what a project holds is counted as chunks are kept and removed, without
/// listing its directory on every keep (security review 2026-11-27, finding 4), and bounded in bytes
/// and in count.
@Suite("Sentry protocol: the chunk store's bounds")
struct ChunkStoreTests {
    func keep(_ store: ChunkStore, _ text: String, in scratch: TemporaryDirectory, project: Int64 = 1) throws -> String
    {
        let bytes = Data(text.utf8)
        let sha1 = Insecure.SHA1.hash(data: bytes).lowercaseHex
        let temporary = scratch.write("incoming-\(UUID().uuidString)", bytes)
        try store.keep(temporaryPath: temporary, sha1: sha1, size: Int64(bytes.count), project: project)
        return sha1
    }

    @Test("a project holds at most its count of chunks; a removed chunk makes room; a chunk kept twice counts once")
    func countBound() throws {
        let scratch = TemporaryDirectory()
        defer { scratch.remove() }
        let store = ChunkStore(directory: scratch.path + "/chunks", maxBytesPerProject: 1 << 20, maxChunksPerProject: 8)
        let kept = try (0..<8).map { try keep(store, "chunk \($0)", in: scratch) }
        _ = try keep(store, "chunk 0", in: scratch)
        #expect(throws: ChunkStore.Refusal.self) { try keep(store, "chunk 8", in: scratch) }
        // Another project has its own count.
        _ = try keep(store, "chunk 8", in: scratch, project: 2)
        store.remove([kept[0]], project: 1)
        #expect(!store.contains(kept[0], project: 1))
        _ = try keep(store, "chunk 9", in: scratch)
        #expect(store.contains(kept[1], project: 1))
    }

    @Test("a project holds at most its bytes of chunks")
    func byteBound() throws {
        let scratch = TemporaryDirectory()
        defer { scratch.remove() }
        let store = ChunkStore(directory: scratch.path + "/chunks", maxBytesPerProject: 20)
        _ = try keep(store, "0123456789", in: scratch)
        _ = try keep(store, "abcdefghij", in: scratch)
        #expect(throws: ChunkStore.Refusal.self) { try keep(store, "k", in: scratch) }
    }
}
