import BlackboxCompression
import BlackboxFormat
import BlackboxSentry
import Crypto
import Foundation

@testable import BlackboxCollector

/// The request bodies of security review 2026-11-27 (../shared/reviews/security-2026-11-27.md), in
/// the shapes and sizes its evidence gives, for `HostileProcessTests.reviewPatterns`.
struct ReviewPatterns: Sendable {
    /// Finding 1: a report of 20 frames whose names are 8 KB of `Swift. ( ( (` (1.3 KB zipped).
    var quadraticNamesBundle: Data
    /// Finding 1: a Sentry event of 7 such frames (416 bytes gzipped).
    var quadraticNamesEnvelope: Data
    /// Finding 2: `log` items of 10,000 bodiless records each: 100 of them (2 MB decoded, a million
    /// records, a hundred times the envelope's 10,000), where the review sent 999: the same pattern past
    /// the same bounds, at a tenth of the CPU a debug collector spends beside a hundred other tests
    /// (with 999, an attack request ran past its 60 s in a parallel run).
    var logItems: Data
    /// Finding 6: ten events of 26,700 frames with nothing in them (~400 KB decoded each).
    var emptyFrameEvents: [Data]
    /// Finding 7: an event just under Sentry's 1 MiB of 20,480 frames at addresses no image holds, and
    /// 1,500 images.
    var framesAndImages: Data
    /// Finding 4: a chunk upload of 500 parts of 8 bytes.
    var tinyChunks: Data
    /// Finding 5: one 8 KB chunk, then an assemble naming it 256 times.
    var oneChunk: Data
    var repeatedAssemble: Data

    static func make() throws -> ReviewPatterns {
        let quadraticName = "Swift." + String(repeating: "( ", count: 3_997)
        let chunk = Data((0..<8_192).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) })
        let chunkName = Insecure.SHA1.hash(data: chunk).lowercaseHex
        return ReviewPatterns(
            quadraticNamesBundle: try BundleArchive.make(
                app: .init(name: "shop"), host: "h",
                reports: [Reports.crash(functions: Array(repeating: quadraticName, count: 20))]),
            quadraticNamesEnvelope: try envelope([
                event(exceptionFrames: Array(repeating: "{\"function\":\"\(quadraticName)\"}", count: 7))
            ]),
            logItems: try envelope((0..<100).map { ("log", logItemPayloads[$0 % logItemPayloads.count]) }),
            emptyFrameEvents: try (0..<10).map { _ in
                // Frames with nothing a report keeps (no address, no function), each a little different
                // so that the envelope stays under the 200× inflation bound, as the review's did (8×).
                try envelope([
                    event(
                        exceptionFrames: (0..<1_100).map { _ in emptyFrame() },
                        threads: (0..<100).map { _ in (0..<256).map { _ in emptyFrame() } })
                ])
            },
            framesAndImages: try envelope([
                event(
                    exceptionFrames: [],
                    threads: (0..<80).map { _ in
                        (0..<256).map { _ in
                            "{\"instruction_addr\":\"0x7f00\(String(UInt32.random(in: 0...UInt32.max), radix: 16))\"}"
                        }
                    },
                    images: (0..<1_500).map {
                        "{\"type\":\"elf\",\"image_addr\":\"0x\(String(0x1000 + $0 * 0x100, radix: 16))\",\"image_size\":16,"
                            + "\"code_file\":\"/lib/x\($0).so\",\"debug_id\":\"\(UUID().uuidString.lowercased())\"}"
                    })
            ]),
            tinyChunks: ChunkForm.body(
                (0..<500).map { index in
                    let bytes = Data(String(format: "%08d", index).utf8)
                    return .init(name: Insecure.SHA1.hash(data: bytes).lowercaseHex, bytes: bytes)
                }),
            oneChunk: ChunkForm.body([.init(name: chunkName, bytes: chunk)]),
            repeatedAssemble: try JSONSerialization.data(withJSONObject: [
                String(repeating: "5", count: 40): [
                    "name": "x.debug", "chunks": Array(repeating: chunkName, count: 256),
                ]
            ]))
    }

    /// `log` item payloads of 10,000 records, each a random 0 or 1: all zeros would be refused as past
    /// the 200× inflation bound. Eight of them (160 KB) take turns, more than gzip's 32 KB window apart.
    static let logItemPayloads: [String] = (0..<8).map { _ in
        var payload = Array("{\"items\":[".utf8)
        payload.reserveCapacity(20_020)
        var generator = SystemRandomNumberGenerator()
        for index in 0..<10_000 {
            if index > 0 { payload.append(UInt8(ascii: ",")) }
            payload.append((generator.next() as UInt8) & 1 == 0 ? UInt8(ascii: "0") : UInt8(ascii: "1"))
        }
        return String(decoding: payload + Array("]}".utf8), as: UTF8.self)
    }

    static func emptyFrame() -> String { "{\"x\":\"\(String(UInt16.random(in: 0...UInt16.max), radix: 16))\"}" }

    /// A Sentry event: an exception with `exceptionFrames`, `threads` of frames, `images` in debug_meta
    /// (each element already JSON).
    static func event(exceptionFrames: [String], threads: [[String]] = [], images: [String] = []) -> (String, String) {
        var event =
            "{\"event_id\":\"\(UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased())\",\"platform\":\"native\","
            + "\"exception\":{\"values\":[{\"type\":\"E\",\"value\":\"v\",\"stacktrace\":{\"frames\":["
            + exceptionFrames.joined(separator: ",") + "]}}]}"
        if !threads.isEmpty {
            event +=
                ",\"threads\":{\"values\":["
                + threads.map { "{\"stacktrace\":{\"frames\":[" + $0.joined(separator: ",") + "]}}" }.joined(
                    separator: ",") + "]}"
        }
        if !images.isEmpty { event += ",\"debug_meta\":{\"images\":[" + images.joined(separator: ",") + "]}" }
        return ("event", event + "}")
    }

    /// A gzipped envelope of `items` (type, JSON payload).
    static func envelope(_ items: [(String, String)]) throws -> Data {
        let envelope = SentryEnvelope(items: items.map { .init(type: $0.0, payload: Data($0.1.utf8)) })
        return Data(try GzipData.compress(try envelope.encoded()))
    }
}
