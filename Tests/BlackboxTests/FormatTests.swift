import BlackboxTestSupport
import Foundation
import Testing

@testable import Blackbox

@Suite struct FormatTests {
    // 2026-11-21T22:39:39.123Z
    let timestamp: UInt64 = 1_795_300_779_123_456_789

    @Test func timestampsAreUTCWithMilliseconds() {
        #expect(TimestampFormatter.string(timestamp) == "2026-11-21T22:39:39.123Z")
        #expect(TimestampFormatter.string(0) == "1970-01-01T00:00:00.000Z")
        #expect(TimestampFormatter.string(951_782_400_000_000_000) == "2000-02-29T00:00:00.000Z")
    }

    @Test func cachedTimestampsMatchFreshOnes() {
        var formatter = TimestampFormatter()
        var random = SplitMix64(seed: 11)
        var t = timestamp
        for _ in 0..<5000 {
            t += random.next() % 3_000_000_000  // same millisecond, next millisecond, next second, ...
            if random.next() % 4 == 0 { t -= t % 1_000_000 }
            var out = OutputBuffer(capacity: 32)
            formatter.append(t, to: &out)
            #expect(String(decoding: out.bytes, as: UTF8.self) == TimestampFormatter.string(t))
        }
    }

    @Test func textLine() {
        let line = withRecord(
            message: Array("user signed in".utf8), metadata: [("request", "42"), ("who", "a b")], timestamp: timestamp
        ) { formatted(.text, $0) }
        #expect(
            line == "2026-11-21T22:39:39.123Z INFO  net: user signed in request=42 who=\"a b\" (App/main.swift:12)\n")
    }

    @Test("a metadata value is written bare exactly when it is printable ASCII without space, quote or =")
    func bareTextValues() {
        func isBare(_ bytes: [UInt8]) -> Bool {
            !bytes.isEmpty && bytes.allSatisfy { $0 > 0x20 && $0 < 0x7F && $0 != 0x22 && $0 != 0x3D }
        }
        // Every byte at every position of values around a word's length, the overlapping last word included.
        for length in 0...17 {
            for position in 0..<max(length, 1) {
                for byte in UInt8.min...UInt8.max {
                    var value = Array(repeating: UInt8(ascii: "a"), count: length)
                    if length > 0 { value[position] = byte }
                    let bare = value.withUnsafeBytes { LineFormatter.isBareTextValue($0) }
                    #expect(bare == isBare(value), "byte \(byte) at \(position) of \(length)")
                    if bare != isBare(value) { return }
                }
            }
        }
        let line = withRecord(
            message: [], metadata: [("id", "req-0123456789abcdef"), ("e", "a=b")], timestamp: timestamp
        ) {
            formatted(.text, $0)
        }
        #expect(line.contains(" id=req-0123456789abcdef e=\"a=b\""))
    }

    @Test func newlinesNeverSplitALine() {
        let text = withRecord(message: Array("one\ntwo\r".utf8), timestamp: timestamp) { formatted(.text, $0) }
        #expect(text.filter { $0 == "\n" }.count == 1)
        #expect(text.contains("one\\ntwo\\r"))
        let json = withRecord(message: Array("a\"b\\c\nd\u{01}".utf8), timestamp: timestamp) {
            formatted(.jsonLines, $0)
        }
        #expect(json.filter { $0 == "\n" }.count == 1)
    }

    @Test func jsonLineParses() throws {
        let line = withRecord(
            level: .warning, message: Array("quote \" and \\ and \u{01}".utf8), metadata: [("k", "v\"")],
            timestamp: timestamp
        ) { formatted(.jsonLines, $0) }
        let object = try #require(JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        #expect(object["ts"] as? String == "2026-11-21T22:39:39.123Z")
        #expect(object["level"] as? String == "warning")
        #expect(object["label"] as? String == "net")
        #expect(object["msg"] as? String == "quote \" and \\ and \u{01}")
        #expect((object["meta"] as? [String: String])?["k"] == "v\"")
        #expect(object["file"] as? String == "App/main.swift")
        #expect(object["line"] as? Int == 12)
        #expect(object["tid"] as? Int == 7)
    }

    @Test("JSON Lines: the trace context at the top level under OpenTelemetry's names, the rest as meta")
    func jsonTraceContext() throws {
        let line = withRecord(
            message: Array("charged".utf8),
            metadata: [
                ("request_id", "r-1"), ("span_id", "00f067aa0ba902b7"), ("trace_flags", "01"),
                ("trace_id", "4bf92f3577b34da6a3ce929d0e0e4736"),
            ], timestamp: timestamp
        ) { formatted(.jsonLines, $0) }
        let object = try #require(JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        #expect(object["trace_id"] as? String == "4bf92f3577b34da6a3ce929d0e0e4736")
        #expect(object["span_id"] as? String == "00f067aa0ba902b7")
        #expect(object["trace_flags"] as? String == "01")
        #expect(object["meta"] as? [String: String] == ["request_id": "r-1"])
        let traceOnly = withRecord(message: [], metadata: [("trace_id", "ab")], timestamp: timestamp) {
            formatted(.jsonLines, $0)
        }
        #expect(!traceOnly.contains("meta"), "\(traceOnly)")
    }

    @Test("ECS: @timestamp, log.level and message first, ecs.version, trace and error fields, the rest as labels")
    func ecsLine() throws {
        let line = withRecord(
            level: .error, message: Array("card \"declined\"".utf8),
            metadata: [
                ("error", "PaymentError.declined"), ("http.method", "POST"), ("span_id", "00f067aa0ba902b7"),
                ("trace_id", "4bf92f3577b34da6a3ce929d0e0e4736"),
            ], timestamp: timestamp
        ) { formatted(.ecs, $0) }
        #expect(
            line.hasPrefix(
                #"{"@timestamp":"2026-11-21T22:39:39.123Z","log.level":"error","message":"card \"declined\"","#))
        #expect(line.hasSuffix("}\n") && line.filter { $0 == "\n" }.count == 1)
        let object = try #require(JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        #expect(object["ecs.version"] as? String == "1.6.0")
        #expect(object["log.logger"] as? String == "net")
        #expect(object["trace.id"] as? String == "4bf92f3577b34da6a3ce929d0e0e4736")
        #expect(object["span.id"] as? String == "00f067aa0ba902b7")
        #expect(object["error.message"] as? String == "PaymentError.declined")
        #expect(object["log.origin.file.name"] as? String == "App/main.swift")
        #expect(object["log.origin.file.line"] as? Int == 12)
        #expect(object["process.thread.id"] as? Int == 7)
        #expect(object["labels"] as? [String: String] == ["http_method": "POST"])
    }

    @Test("logfmt: time, level, logger, a quoted msg, metadata pairs quoted only when needed, source, tid")
    func logfmtLine() {
        let line = withRecord(
            label: "shop api", message: Array("paid \"in full\"".utf8),
            metadata: [("amount", "12.50"), ("note", "two words"), ("bad key=", "x"), ("trace_id", "ab")],
            timestamp: timestamp
        ) { formatted(.logfmt, $0) }
        #expect(
            line
                == #"time=2026-11-21T22:39:39.123Z level=info logger="shop api" msg="paid \"in full\"" amount=12.50 note="two words" bad_key_=x trace_id=ab source=App/main.swift:12 tid=7"#
                + "\n")
        let spaced = withRecord(file: "My App/main.swift", message: [], timestamp: timestamp) { formatted(.logfmt, $0) }
        #expect(spaced.contains(#" source="My App/main.swift:12" tid=7"#), "\(spaced)")
    }

    @Test func fastMessageSegmentsRender() {
        let id = -42
        let big: UInt64 = .max
        var message: FastLogMessage = "id=\(id) big=\(big) ms=\(2.5) ok=\(true) name=\("zoë") sub=\("abc".dropFirst())"
        var bytes = [UInt8](repeating: 0, count: message.segments.encodedCount)
        bytes.withUnsafeMutableBytes { message.segments.copy(to: $0.baseAddress!) }
        let line = withRecord(kind: .segments, message: bytes, timestamp: timestamp) { formatted(.text, $0) }
        #expect(line.contains("net: id=-42 big=18446744073709551615 ms=2.5 ok=true name=zoë sub=bc ("))
    }

    @Test func adjacentTextIsOneSegment() {
        let name = "bob"
        let merged: FastLogMessage = "user=\(name) ok"  // literal + string + literal
        #expect(merged.segments.encodedCount == 3 + "user=bob ok".utf8.count)
        let split: FastLogMessage = "a\(1)b"  // text, integer, text
        #expect(split.segments.encodedCount == (3 + 1) + 9 + (3 + 1))
    }

    @Test func fastMessageTooLongIsCutAtACharacterBoundaryWithAMarker() {
        let long = String(repeating: "é", count: 300)  // 600 bytes
        var message: FastLogMessage = "x=\(long)"
        #expect(message.segments.cut > 0)
        var bytes = [UInt8](repeating: 0, count: message.segments.encodedCount)
        bytes.withUnsafeMutableBytes { message.segments.copy(to: $0.baseAddress!) }
        let line = withRecord(kind: .segments, message: bytes, timestamp: timestamp) { formatted(.text, $0) }
        #expect(line.contains("bytes cut]"))
        #expect(!line.contains("\u{FFFD}"))
    }

    @Test func decimalsMatchTheStandardLibrary() {
        var values: [UInt64] = [0, 1, 9, 10, 99, 100, 101, 999, 1000, 65535, .max, .max - 1]
        var random = SplitMix64(seed: 7)
        for _ in 0..<2000 { values.append(random.next() >> (random.next() % 64)) }
        for value in values {
            var out = OutputBuffer(capacity: 8)
            out.appendDecimal(value)
            #expect(String(decoding: out.bytes, as: UTF8.self) == String(value))
        }
        for value: Int64 in [-1, -10, .min, .max] {
            var out = OutputBuffer(capacity: 8)
            out.appendDecimal(value)
            #expect(String(decoding: out.bytes, as: UTF8.self) == String(value))
        }
    }

    /// The escape fast path scans words and an overlapping last word: a line break at any position,
    /// in strings of any length, must still be escaped.
    @Test func lineBreaksAreEscapedAtEveryPosition() {
        for length in 1...40 {
            for position in 0..<length {
                var bytes = [UInt8](repeating: UInt8(ascii: "a"), count: length)
                bytes[position] = UInt8(ascii: "\n")
                let text = withRecord(message: bytes, timestamp: timestamp) { formatted(.text, $0) }
                #expect(text.filter { $0 == "\n" }.count == 1, "length \(length), position \(position)")
                let json = withRecord(message: bytes, timestamp: timestamp) { formatted(.jsonLines, $0) }
                #expect(json.filter { $0 == "\n" }.count == 1, "length \(length), position \(position)")
            }
        }
    }

    @Test func malformedSegmentsStopWithoutCrashing() {
        let line = withRecord(kind: .segments, message: [1, 200, 0, 65, 2, 1], timestamp: timestamp) {
            formatted(.text, $0)
        }
        #expect(line.hasSuffix("(App/main.swift:12)\n"))
    }

    @Test("control characters, line separators and bidi overrides are escaped in every part of a text line")
    func forgingCharactersAreEscaped() {
        let line = withRecord(
            label: "a\nb", file: "F\u{1B}.swift",
            message: Array("x\u{1B}[31my\u{0B}\u{0C}\u{85}z\u{2028}w\u{202E}v\u{7F}".utf8) + [0xFF],
            metadata: [("k\ney", "v\u{1B}")], timestamp: timestamp
        ) { formatted(.text, $0) }
        #expect(
            line
                == "2026-11-21T22:39:39.123Z INFO  a\\nb: x\\u001b[31my\\u000b\\u000c\\u0085z\\u2028w\\u202ev\\u007f\\xff"
                + " k\\ney=\"v\\u001b\" (F\\u001b.swift:12)\n")
    }

    @Test("fuzz: random bytes in label, key, value and message; every record stays one parseable line")
    func fuzzedRecordsStayOneLine() throws {
        let seed =
            ProcessInfo.processInfo.environment["BLACKBOX_FUZZ_SEED"].flatMap { UInt64($0) }
            ?? UInt64.random(in: 1...UInt64.max)
        print("FormatTests fuzz seed \(seed) (BLACKBOX_FUZZ_SEED=\(seed) repeats it)")
        var random = SplitMix64(seed: seed)
        // Fragments that have forged lines or steered terminals, mixed with random bytes.
        let fragments: [[UInt8]] = [
            [0x0A], [0x0D], [0x09], [0x0B], [0x0C], [0x1B, 0x5B, 0x32, 0x4A], [0x7F], [0x00], [0xC2, 0x85],
            [0xC2, 0x9B], [0xE2, 0x80, 0xA8], [0xE2, 0x80, 0xA9], [0xE2, 0x80, 0xAE], [0xE2, 0x81, 0xA6], [0xFF],
            [0xC0, 0x8A], [0xED, 0xA0, 0x80], [0xF4, 0x90, 0x80, 0x80], [0xE2, 0x82],
            Array("2026-11-21T22:39:39.123Z INFO  x: ".utf8),
            Array("\"=\\ ".utf8), Array("é漢🙂".utf8),
        ]
        func randomBytes() -> [UInt8] {
            var bytes: [UInt8] = []
            for _ in 0..<Int(random.next() % 6) {
                if random.next() % 2 == 0 {
                    bytes += fragments[Int(random.next() % UInt64(fragments.count))]
                } else {
                    bytes += (0..<Int(random.next() % 8)).map { _ in UInt8(truncatingIfNeeded: random.next()) }
                }
            }
            return bytes
        }
        for iteration in 0..<3000 {
            let label = String(decoding: randomBytes(), as: UTF8.self)
            let key = String(decoding: randomBytes(), as: UTF8.self)
            let value = String(decoding: randomBytes(), as: UTF8.self)
            let message = randomBytes()
            for format in [LogFormat.text, .jsonLines, .ecs, .logfmt] {
                let line = withRecord(
                    label: label, message: message, metadata: [(key, value)], timestamp: timestamp
                ) { rawFormatted(format, $0) }
                let context = "iteration \(iteration), \(format), seed \(seed)"
                #expect(line.last == 0x0A, "\(context)")
                #expect(!line.dropLast().contains { $0 < 0x20 || $0 == 0x7F }, "\(context): a control byte")
                let text = try #require(String(validating: line, as: UTF8.self), "\(context): not UTF-8")
                #expect(
                    !text.unicodeScalars.contains {
                        (0x80...0x9F).contains($0.value) || (0x2028...0x202E).contains($0.value)
                            || (0x2066...0x2069).contains($0.value)
                    }, "\(context): a separator or override")
                switch format {
                case .text:
                    // Bytes, not characters: a label starting with a combining mark joins the space.
                    #expect(line.starts(with: Array("2026-11-21T22:39:39.123Z INFO  ".utf8)), "\(context)")
                case .jsonLines:
                    let object = try #require(
                        try JSONSerialization.jsonObject(with: Data(line)) as? [String: Any], "\(context)")
                    #expect(object["label"] as? String == label, "\(context)")
                    #expect((object["meta"] as? [String: String])?[key] == value, "\(context)")
                    if let valid = String(validating: message, as: UTF8.self) {
                        #expect(object["msg"] as? String == valid, "\(context)")
                    }
                case .ecs:
                    let object = try #require(
                        try JSONSerialization.jsonObject(with: Data(line)) as? [String: Any], "\(context)")
                    #expect(object["log.logger"] as? String == label, "\(context)")
                    // By bytes, as the formatter does: a "." followed by a combining mark is one
                    // Character, which a String replacement would not match.
                    let labelKey = String(
                        decoding: key.utf8.map { $0 == UInt8(ascii: ".") ? UInt8(ascii: "_") : $0 }, as: UTF8.self)
                    #expect((object["labels"] as? [String: String])?[labelKey] == value, "\(context)")
                    if let valid = String(validating: message, as: UTF8.self) {
                        #expect(object["message"] as? String == valid, "\(context)")
                    }
                case .logfmt:
                    #expect(
                        line.starts(with: Array("time=2026-11-21T22:39:39.123Z level=info logger=".utf8)), "\(context)")
                    #expect(line.contains(Array(" msg=\"".utf8)), "\(context)")
                }
            }
        }
    }
}
