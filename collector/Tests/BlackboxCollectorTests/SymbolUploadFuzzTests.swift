import BlackboxSymbols
import BlackboxTestSupport
import Foundation
import Testing

@testable import BlackboxCollector

/// Issue 30: the symbol upload's request parts (the build-id in the path, the `name` and `replace`
/// query, `Content-Encoding`, the body) mutated at random and sent over HTTP to a collector, seeded
/// and repeatable (`BLACKBOX_FUZZ_SEED`). Every answer is a specific refusal or a stored file, never
/// a 500, and the collector keeps serving.
@Suite("Symbol upload fuzzing")
struct SymbolUploadFuzzTests {
    static func mutated(_ text: String, _ random: inout SplitMix64) -> String {
        var bytes = Array(text.utf8)
        for _ in 0...Int.random(in: 0...3, using: &random) {
            let at = bytes.isEmpty ? 0 : Int.random(in: 0..<bytes.count, using: &random)
            switch Int.random(in: 0..<6, using: &random) {
            case 0 where !bytes.isEmpty: bytes[at] = UInt8.random(in: 0x20...0x7E, using: &random)
            case 1: bytes.insert(contentsOf: Array("/../%00\\\u{7F}ÄB".utf8).shuffled(using: &random).prefix(3), at: at)
            case 2 where !bytes.isEmpty: bytes.removeSubrange(at...)
            case 3: bytes += Array(repeating: UInt8(ascii: "a"), count: Int.random(in: 1...400, using: &random))
            case 4: bytes = Array(text.uppercased().utf8)
            default: bytes.insert(UInt8.random(in: 0x30...0x66, using: &random), at: at)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    @Test("mutated build-ids, names, encodings and bodies: a specific refusal or a stored file, never a 500")
    func mutatedRequests() async throws {
        let fixture = try await SymbolFixture.make()
        defer { fixture.remove() }
        let collector = try await TestCollector.start()
        defer { Task { await collector.stop() } }
        let seed =
            ProcessInfo.processInfo.environment["BLACKBOX_FUZZ_SEED"].flatMap { UInt64($0) }
            ?? UInt64.random(in: 1...UInt64.max)
        print("fuzz symbol uploads: seed \(seed) (BLACKBOX_FUZZ_SEED=\(seed) repeats it)")
        var random = SplitMix64(seed: seed)
        let debug = try Data(contentsOf: URL(fileURLWithPath: fixture.debugFile))
        let gzipped = try SymbolStoreTests.gzip(debug, in: fixture.scratch)
        let bodies: [(Data, String?)] = [
            (debug, nil), (gzipped, "gzip"), (gzipped.prefix(gzipped.count / 2), "gzip"), (debug, "gzip"),
            (gzipped, "br"), (debug.prefix(64), nil), (Data(), nil), (Data("not an elf".utf8), "identity"),
        ]
        var statuses: [Int: Int] = [:]
        let runs = 300
        for _ in 0..<runs {
            // Each part mutated a third of the time, so that most requests get past the first check.
            func maybe(_ text: String) -> String {
                Int.random(in: 0..<3, using: &random) == 0 ? Self.mutated(text, &random) : text
            }
            let buildID = maybe(fixture.buildID)
            let name = maybe("app.debug")
            var (body, encoding) = bodies[Int.random(in: 0..<bodies.count, using: &random)]
            encoding = encoding.map(maybe)
            var path =
                "/api/v1/symbols/"
                + (buildID.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed) ?? "x")
            var query = ["name=" + (name.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")]
            if Bool.random(using: &random) { query.append("replace=" + maybe("1")) }
            path += "?" + query.joined(separator: "&")
            var headers = [("Authorization", "Bearer \(collector.adminToken)")]
            // What an HTTP client can send at all: visible ASCII.
            if let encoding, encoding.utf8.allSatisfy({ (0x20...0x7E).contains($0) }) {
                headers.append(("Content-Encoding", encoding))
            }
            let answer = try await HTTP.request(collector.baseURL + path, method: .PUT, headers: headers, body: body)
            statuses[answer.status, default: 0] += 1
            #expect(answer.status < 500, "\(answer.status) for \(path) \(encoding ?? "-"): \(answer.text.prefix(300))")
            if answer.status >= 400 && answer.status != 404 {
                #expect(answer.json["error"] is String, "\(answer.status) without a reason: \(answer.text.prefix(200))")
            }
        }
        print("fuzz symbol uploads: \(runs) requests, answers \(statuses.sorted { $0.key < $1.key })")
        #expect(try await HTTP.request(collector.baseURL + "/health").status == 200)
        // Whatever was stored is a valid file under a valid build-id and a name for people.
        for file in try await collector.server.store.symbolFiles(in: ProjectScope(projectID: 1), page: Page()) {
            #expect(ELFBuildID.isValid(file.buildID) && SymbolUpload.isAcceptable(name: file.fileName), "\(file)")
        }
    }
}
