import BlackboxCompression
import BlackboxFormat
import BlackboxSentry
import BlackboxTestSupport
import Crypto
import Foundation
import NIOCore
import Testing

@testable import BlackboxCollector

/// Issue 47, item 3: the collector's parsers of what SDKs and apps send, fuzzed with a clock. Each
/// input's CPU time is held to a linear budget (`Fuzzer`), so a quadratic path (the review's critical
/// one, `SwiftNames.simplified`, was one) fails the run as a trap would. `BLACKBOX_FUZZ_SEED` repeats
/// a run; `BLACKBOX_FUZZ_SECONDS` sets each target's time (2 s in `make test`, 60 s by hand).
@Suite("Ingest fuzzing with a clock")
struct IngestFuzzTests {
    @Test("Sentry envelopes: inspected into a plan or refused, within the limits and a linear time")
    func envelopes() throws {
        let format = SentryEnvelopeFormat(limits: IngestLimits(), inspectionMemory: nil)
        let upload = UploadAdmission.Admitted(
            key: APIKey(id: 1, projectID: 1, kind: .ingest, prefix: "k", createdAt: Date()), uploadID: nil,
            declaredLength: nil)
        let outcome = Fuzzer.run("Sentry envelope", corpus: [Array(SentryCorpus.envelope.utf8)], numbers: true) {
            bytes in
            let data = Data(bytes)
            let body = ReceivedBody(path: "/nonexistent", sha256: "s", size: data.count, bytes: data)
            guard let inspection = try? format.inspect(data, body: body, upload: upload, receivedAt: Date()) else {
                return
            }
            #expect(inspection.plan.files.count <= SentryEnvelope.maxItems)
            #expect(inspection.plan.occurrences.count <= SentryEnvelope.maxItems)
            #expect(inspection.plan.storedBytes <= data.count + SentryEnvelopeFormat.maxEventItemBytes * 40)
        }
        #expect(outcome.runs > 0 && outcome.overBudget.isEmpty, "\(outcome.overBudget.map { ($0.seconds, $0.size) })")
    }

    @Test("Sentry events: converted to a report and grouped within a linear time")
    func events() throws {
        let outcome = Fuzzer.run("Sentry event", corpus: [Array(SentryCorpus.event.utf8)], numbers: true) { bytes in
            guard let event = try? SentryJSON.parse(Data(bytes)) else { return }
            let report = SentryEventReport().report(event, receivedAt: Date())
            let signature = CrashSignature.compute(report)
            #expect(signature.title.count <= CrashSignature.maxTitleCharacters + 1)
        }
        #expect(outcome.runs > 0 && outcome.overBudget.isEmpty, "\(outcome.overBudget.map { ($0.seconds, $0.size) })")
    }

    @Test("Swift names: simplified and normalized within a linear time, however long and nested")
    func swiftNames() throws {
        let corpus = SentryCorpus.names.map { Array($0.utf8) }
        let outcome = Fuzzer.run("Swift names", corpus: corpus, numbers: false) { bytes in
            let name = String(decoding: bytes, as: UTF8.self)
            _ = SwiftNames.simplified(name)
            _ = CrashSignature.normalizeFunction(name)
            _ = InAppRules.withoutSpecializationMarkers(name)
        }
        #expect(outcome.runs > 0 && outcome.overBudget.isEmpty, "\(outcome.overBudget.map { ($0.seconds, $0.size) })")
    }

    @Test("sentry-cli chunk forms: a chunk kept only under its own sha1, or a refusal, within a linear time")
    func chunkForms() throws {
        let scratch = TemporaryDirectory()
        defer { scratch.remove() }
        let chunks = ChunkStore(
            directory: scratch.path + "/chunks", maxBytesPerProject: 64 << 20, maxChunksPerProject: 100_000)
        let receiver = DebugFileChunks(
            chunks: chunks,
            blobs: try DirectoryBlobStore(root: scratch.path + "/blobs", temporaryDirectory: scratch.path + "/tmp"),
            chunkBytes: 1 << 20, maxRequestBytes: 4 << 20, chunksPerRequest: 4, maxCompressionRatio: 200)
        let boundary = "----blackboxfuzz"
        let plain = Data("the first chunk's bytes\n".utf8)
        let gzipped = Data(try GzipData.compress(Array("the second chunk, compressed\n".utf8)))
        func part(_ field: String, _ bytes: Data, named sha1: Data) -> Data {
            let name = Insecure.SHA1.hash(data: sha1).map { String(format: "%02x", $0) }.joined()
            return Data(
                "--\(boundary)\r\nContent-Disposition: form-data; name=\"\(field)\"; filename=\"\(name)\"\r\nContent-Type: application/octet-stream\r\n\r\n"
                    .utf8) + bytes + Data("\r\n".utf8)
        }
        let form =
            part("file", plain, named: plain)
            + part("file_gzip", gzipped, named: Data("the second chunk, compressed\n".utf8))
            + Data("--\(boundary)--\r\n".utf8)
        var kept = 0
        let outcome = Fuzzer.run("chunk form", corpus: [Array(form)], numbers: false) { bytes in
            guard let reader = try? receiver.form(contentType: "multipart/form-data; boundary=\(boundary)", project: 1)
            else { return }
            defer { reader.discard() }
            // In pieces, as a connection delivers them.
            var at = 0
            while at < bytes.count {
                let end = min(bytes.count, at + 1 + (at * 7919 % 700))
                guard (try? reader.feed(ByteBuffer(bytes: bytes[at..<end]))) != nil else { return }
                at = end
            }
            if (try? reader.finish()) != nil { kept += 1 }
        }
        #expect(outcome.runs > 0 && outcome.overBudget.isEmpty, "\(outcome.overBudget.map { ($0.seconds, $0.size) })")
        #expect(kept > 0, "the unmutated form is kept")
        // Whatever was kept is named by its own bytes' sha1.
        let names = (try? FileManager.default.subpathsOfDirectory(atPath: scratch.path + "/chunks")) ?? []
        for path in names where !path.hasSuffix("/") {
            let full = scratch.path + "/chunks/" + path
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: full, isDirectory: &isDirectory), !isDirectory.boolValue,
                let bytes = FileManager.default.contents(atPath: full)
            else { continue }
            let sha1 = Insecure.SHA1.hash(data: bytes).map { String(format: "%02x", $0) }.joined()
            #expect(path.hasSuffix(sha1), "\(path) holds bytes whose sha1 is \(sha1)")
        }
    }

    /// The fuzzer's find: MultipartKit 4.7 trapped on a header name byte over 0x7F, stopping the
    /// collector. The reader that replaces it refuses such a form, and reads a form split anywhere
    /// into the same parts.
    @Test("multipart forms: a non-ASCII header name is refused, not trapped on; any split reads alike")
    func multipartReader() throws {
        let form = Array(
            "preamble\r\n--b0\r\nContent-Disposition: form-data; name=\"file\"\r\n\r\nfirst\r\n--b\r\n--b0\r\nX: 1\r\n\r\n\r\n--b0--\r\nepilogue"
                .utf8)
        func read(_ pieces: [ArraySlice<UInt8>]) throws -> (parts: [[String]], bodies: [[UInt8]], complete: Bool) {
            let reader = MultipartReader(boundary: "b0")
            var parts: [[String]] = [[]]
            var bodies: [[UInt8]] = [[]]
            reader.onHeader = { parts[parts.count - 1].append("\($0)=\($1)") }
            reader.onBody = { bodies[bodies.count - 1] += $0 }
            reader.onPartComplete = {
                parts.append([])
                bodies.append([])
            }
            for piece in pieces { try reader.execute(piece) }
            return (parts.dropLast(), bodies.dropLast(), reader.isComplete)
        }
        let whole = try read([form[...]])
        #expect(whole.parts == [["Content-Disposition=form-data; name=\"file\""], ["X=1"]], "\(whole.parts)")
        #expect(whole.bodies == [Array("first\r\n--b".utf8), []] && whole.complete, "\(whole.bodies)")
        for split in 1..<form.count {
            let pieces = try read([form[..<split], form[split...]])
            #expect(
                pieces.parts == whole.parts && pieces.bodies == whole.bodies && pieces.complete, "split at \(split)")
        }
        let hostile = Array("--b0\r\nN".utf8) + [0x80] + Array("me: x\r\n\r\nbody\r\n--b0--\r\n".utf8)
        #expect(throws: MultipartReader.SyntaxError.self) { try read([hostile[...]]) }
        let endless =
            Array("--b0\r\nX: ".utf8) + Array(repeating: UInt8(ascii: "a"), count: MultipartReader.maxHeaderBytes)
        #expect(throws: MultipartReader.SyntaxError.self) { try read([endless[...]]) }
    }

    @Test("report JSON: decoded, sanitized and grouped within a linear time")
    func signatures() throws {
        var report = Reports.crash(
            functions: SentryCorpus.names.prefix(3).map { $0 } + ["shop.Cart.price(at: Swift.Int) -> Swift.Int"])
        report.metadata = [
            "error.type": "shop.PaymentError", "error.site.file": "shop/Payments.swift", "error.site.line": "42",
        ]
        report.scope = ["route": "/pay/{id}", "method": "POST"]
        let encoded = Array(try CrashReport.makeEncoder().encode(report))
        let sanitizer = FieldSanitizer(maxFieldBytes: IngestLimits().maxFieldBytes)
        let outcome = Fuzzer.run("report signature", corpus: [encoded], numbers: true) { bytes in
            guard let decoded = try? CrashReport.decode(Data(bytes)) else { return }
            guard let clean = try? sanitizer.sanitized(decoded, raw: Data(bytes), decode: CrashReport.decode) else {
                return
            }
            _ = CrashSignature.compute(clean)
            _ = CrashSignature.headline(clean)
        }
        #expect(outcome.runs > 0 && outcome.overBudget.isEmpty, "\(outcome.overBudget.map { ($0.seconds, $0.size) })")
    }
}

/// Seed inputs that reach every branch of the Sentry readers: each item type, each shape a field may
/// take, and names as long and nested as a release build's.
enum SentryCorpus {
    /// A generic specialization as deep as an async Hummingbird handler's, and a 32 KB one.
    static let names: [String] = [
        "generic specialization <Swift.Array<Swift.Int>, (Swift.String, [Swift.Int : Swift.String])> of closure #1 (Hummingbird.Request, Hummingbird.BasicRequestContext) async throws -> Hummingbird.Response in shop.Routes.register(on: Hummingbird.Router<Hummingbird.BasicRequestContext>) -> ()",
        "merged partial apply forwarder for reabstraction thunk helper from @escaping @callee_guaranteed @Sendable @async (@guaranteed Swift.String) -> (@owned Swift.Int, @error @owned Swift.Error)",
        "shop.Cart.price(at: Swift.Int) -> Swift.Int",
        String(repeating: "f<(", count: 4_000) + String(repeating: ")>", count: 4_000),
        String(repeating: "a.b(c: d) -> e in ", count: 1_800),
    ]

    static let event = #"""
        {"event_id":"fedcba9876543210fedcba9876543210","timestamp":1764312000.25,"platform":"python","level":"error",
         "release":"shop@1.4.2+77","environment":"prod","server_name":"web-1","transaction":"/pay/{id}",
         "logger":"shop.payments","message":{"formatted":"charge failed 42 times"},
         "fingerprint":["{{ default }}","payments"],
         "tags":{"region":"eu-1","build":"77"},"user":{"id":"u-1"},"request":{"method":"POST","url":"https://shop.example/pay/17"},
         "contexts":{"os":{"name":"Linux","version":"6.8"},"runtime":{"name":"CPython","version":"3.12.3"},"trace":{"trace_id":"0123456789abcdef0123456789abcdef","span_id":"0123456789abcdef"}},
         "exception":{"values":[{"type":"PaymentError","value":"declined","mechanism":{"type":"generic","handled":false,"meta":{"signal":{"number":11,"code":1,"name":"SIGSEGV"}}},
           "stacktrace":{"frames":[
             {"function":"main","filename":"app.py","lineno":3,"in_app":true,"context_line":"run()","pre_context":["import shop","",""],"post_context":["",""]},
             {"function":"charge","module":"shop.payments","abs_path":"/srv/shop/payments.py","lineno":15,"colno":4,"in_app":true,"vars":{"amount":"42"}},
             {"instruction_addr":"0x7f0000001000","image_addr":"0x7f0000000000","package":"/lib/libc.so.6","symbol":"abort"}]}}]},
         "threads":{"values":[{"id":1,"name":"main","crashed":true,"current":true},{"id":2,"name":"worker","stacktrace":{"frames":[{"function":"loop","lineno":9}]}}]},
         "breadcrumbs":{"values":[{"timestamp":"2026-11-28T06:40:00.125Z","category":"http","message":"GET /cart","level":"info","data":{"status":200}}]},
         "debug_meta":{"images":[{"type":"elf","code_id":"0123456789abcdef0123456789abcdef01234567","image_addr":"0x7f0000000000","image_size":4096,"code_file":"/lib/libc.so.6"}]},
         "extra":{"order":"o-17","attempts":3}}
        """#

    static var envelope: String {
        let session =
            #"{"sid":"8f8d6a8c-1c35-4f6f-9e8a-2b9d8a7c6e5f","status":"crashed","started":"2026-11-28T06:00:00Z","timestamp":"2026-11-28T06:40:00Z","errors":1,"attrs":{"release":"shop@1.4.2"}}"#
        let sessions =
            #"{"aggregates":[{"started":"2026-11-28T06:00:00Z","exited":12,"errored":1,"crashed":1}],"attrs":{"release":"shop@1.4.2"}}"#
        let log =
            #"{"items":[{"timestamp":1764312000.5,"level":"warn","body":"slow charge","trace_id":"0123456789abcdef0123456789abcdef","attributes":{"logger.name":{"value":"shop","type":"string"},"ms":{"value":812,"type":"integer"}}}]}"#
        let items: [(String, String)] = [
            (#"{"type":"event"}"#, event), (#"{"type":"session"}"#, session), (#"{"type":"sessions"}"#, sessions),
            (#"{"type":"log"}"#, log), (#"{"type":"attachment","filename":"notes.txt"}"#, "line one\nline two"),
            (#"{"type":"client_report"}"#, #"{"discarded_events":[]}"#),
        ]
        return #"{"event_id":"fedcba9876543210fedcba9876543210","dsn":"http://k@127.0.0.1:1/1"}"# + "\n"
            + items.map { header, payload in
                String(header.dropLast()) + #","length":\#(payload.utf8.count)}"# + "\n" + payload + "\n"
            }.joined()
    }
}
