import BlackboxSentry
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
