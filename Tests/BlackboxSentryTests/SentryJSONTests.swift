import BlackboxSentry
import BlackboxTestSupport
import Foundation
import Testing

@Suite("Sentry protocol: events read as a lenient JSON tree")
struct SentryJSONTests {
    @Test("every kind of value is read as itself, in objects and lists")
    func everyKind() throws {
        let text =
            #"{"s":"x","n":1.5,"i":3,"b":true,"f":false,"z":null,"a":[1,"two",[3],{"k":"v"},false],"o":{"p":{}}}"#
        let expected = SentryJSON.object([
            "s": .string("x"), "n": .number(1.5), "i": .number(3), "b": .bool(true), "f": .bool(false), "z": .null,
            "a": .array([.number(1), .string("two"), .array([.number(3)]), .object(["k": .string("v")]), .bool(false)]),
            "o": .object(["p": .object([:])]),
        ])
        #expect(try SentryJSON.parse(Data(text.utf8)) == expected)
        #expect(try SentryJSON.parse(Data(#""1""#.utf8)) == .string("1"), "a string of digits stays a string")
    }

    @Test("JSON nested deeper than the decoder allows is refused, not a crash")
    func deepNesting() {
        #expect(throws: (any Error).self) { try SentryJSON.parse(Data(String(repeating: "[", count: 100_000).utf8)) }
        #expect(throws: (any Error).self) {
            try SentryJSON.parse(Data((String(repeating: "{\"a\":", count: 100_000) + "1").utf8))
        }
    }
}

/// The hand-written parser against Foundation's decoder, which `parse` used before: the same tree for
/// every valid document, a refusal for every invalid one.
@Suite("Sentry protocol: the JSON parser reads what Foundation's decoder reads")
struct SentryJSONParserTests {
    static func foundation(_ text: String) throws -> SentryJSON {
        try JSONDecoder().decode(SentryJSON.self, from: Data(text.utf8))
    }

    @Test("2,000 random documents: strings with every escape, numbers of every form, nesting, whitespace")
    func randomDocuments() throws {
        var random = SplitMix64(seed: 0x5E17_C0DE)
        for _ in 0..<2_000 {
            let text = Self.document(depth: 0, random: &random)
            let expected = try Self.foundation(text)
            #expect(try SentryJSON.parse(Data(text.utf8)) == expected, "\(text)")
        }
    }

    @Test("what is not JSON is refused, as Foundation refuses it")
    func invalidDocuments() {
        for text in [
            "", " ", "{", "}", "[,]", "{,}", "[1,,]", "[1 2]", "{\"a\" 1}", "{a:1}", "01", "-", "1.", ".5", "1e", "+1",
            "tru", "nul", "[true false]", "\"unterminated", "\"bad \\x escape\"", "\"\\u12\"", "\"tab\tinside\"",
            "[] []", "{} x", "// comment\n1", "NaN", "[\"a\"", "{\"a\":}",
        ] {
            #expect(throws: SentryJSON.ParseError.self, "\(text.debugDescription)") {
                try SentryJSON.parse(Data(text.utf8))
            }
            #expect(throws: (any Error).self, "Foundation too: \(text.debugDescription)") { try Self.foundation(text) }
        }
    }

    @Test("surrogate pairs make one character; a lone surrogate or invalid UTF-8 is U+FFFD, not a refusal")
    func lenientText() throws {
        #expect(try SentryJSON.parse(Data(#""\ud83d\ude00 \u00e9\/""#.utf8)) == .string("😀 é/"))
        #expect(try SentryJSON.parse(Data(#""a\ud83db""#.utf8)) == .string("a\u{FFFD}b"))
        #expect(try SentryJSON.parse(Data(#""\ude00\ud83d\u0041""#.utf8)) == .string("\u{FFFD}\u{FFFD}A"))
        #expect(try SentryJSON.parse(Data([0x22, 0x61, 0xFF, 0x62, 0x22])) == .string("a\u{FFFD}b"))
        #expect(try SentryJSON.parse(Data(#"{"a":1,"a":2}"#.utf8)) == .object(["a": .number(2)]), "the last wins")
        #expect(try SentryJSON.parse(Data("[1,]".utf8)) == .array([.number(1)]), "as Foundation reads it")
        #expect(try SentryJSON.parse(Data(#"{"a":1,}"#.utf8)) == .object(["a": .number(1)]))
        #expect(try SentryJSON.parse(Data("0e5".utf8)) == .number(0), "RFC 8259 allows it; Foundation refuses it")
    }

    @Test("nesting up to the bound is read; one level deeper is refused")
    func depthBound() throws {
        let depth = SentryJSON.maxDepth
        let deepest = String(repeating: "[", count: depth) + String(repeating: "]", count: depth)
        #expect(throws: Never.self) { try SentryJSON.parse(Data(deepest.utf8)) }
        let deeper = "[" + deepest + "]"
        #expect(throws: SentryJSON.ParseError.self) { try SentryJSON.parse(Data(deeper.utf8)) }
    }

    // MARK: Random documents

    static func document(depth: Int, random: inout SplitMix64) -> String {
        let space = [" ", "", "\n", "\t", "\r\n  "][Int.random(in: 0..<5, using: &random)]
        switch Int.random(in: 0..<(depth < 4 ? 8 : 5), using: &random) {
        case 0: return space + number(random: &random) + space
        case 1: return space + "\"" + string(random: &random) + "\"" + space
        case 2: return ["true", "false", "null"][Int.random(in: 0..<3, using: &random)]
        case 3, 4: return "\"" + string(random: &random) + "\""
        case 5, 6:
            // Distinct names: which of two equal names Foundation keeps is its own affair.
            var names: [String] = []
            for _ in 0..<Int.random(in: 0..<5, using: &random) {
                let name = string(random: &random)
                if !names.contains(name) { names.append(name) }
            }
            let members = names.map {
                "\"" + $0 + "\"" + space + ":" + document(depth: depth + 1, random: &random)
            }
            return "{" + space + members.joined(separator: "," + space) + "}"
        default:
            let values = (0..<Int.random(in: 0..<5, using: &random)).map { _ in
                document(depth: depth + 1, random: &random)
            }
            return "[" + values.joined(separator: ",") + space + "]"
        }
    }

    static func number(random: inout SplitMix64) -> String {
        let sign = Bool.random(using: &random) ? "-" : ""
        let integer =
            Bool.random(using: &random) ? "0" : String(UInt64.random(in: 1...UInt64(1e17), using: &random))
        // Foundation refuses `0e5` (RFC 8259 allows it): checked on its own above.
        let mayHaveExponent = integer != "0"
        let fraction = Bool.random(using: &random) ? "." + String(Int.random(in: 0...999_999, using: &random)) : ""
        let exponent =
            mayHaveExponent && Bool.random(using: &random)
            ? ["e", "E"][Int.random(in: 0..<2, using: &random)] + ["", "+", "-"][Int.random(in: 0..<3, using: &random)]
                + String(Int.random(in: 0...30, using: &random)) : ""
        return sign + integer + fraction + exponent
    }

    static func string(random: inout SplitMix64) -> String {
        let pieces = [
            "a", "Zz9", " ", "é", "日本", "😀", "\\\"", "\\\\", "\\/", "\\b", "\\f", "\\n", "\\r", "\\t", "\\u0041",
            "\\u00e9", "\\ud83d\\ude00", "\\u0000", "\\uFFFD", "{}[],:",
        ]
        return (0..<Int.random(in: 0..<6, using: &random)).map { _ in
            pieces[Int.random(in: 0..<pieces.count, using: &random)]
        }.joined()
    }
}
