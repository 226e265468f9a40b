import Foundation

extension SentryJSON {
    /// The deepest nesting of objects and lists read (Foundation's decoders allow 512; events use a
    /// dozen). Deeper JSON is refused, so that the parser's recursion has a bound.
    public static let maxDepth = 512

    /// Why a text is not JSON, and where.
    public struct ParseError: Error, Equatable, CustomStringConvertible {
        public var offset: Int
        public var reason: String
        public var description: String { "\(reason) at byte \(offset)" }
    }

    /// Reads JSON text (RFC 8259) as a tree.
    ///
    /// Written here rather than read through `JSONDecoder`: Codable can reach an untyped tree only by
    /// trying each type in turn, and every wrong guess builds and throws an error; that was 40 % of
    /// the CPU an event's inspection took (a 5 KB sentry-python event has hundreds of values). It reads
    /// what Foundation's decoder reads (a comma before a closing bracket too) and refuses what it
    /// refuses (comments, control characters in strings), but for `0e5`, which RFC 8259 allows and
    /// Foundation refuses; invalid UTF-8 and unpaired surrogate escapes become U+FFFD. Duplicate
    /// member names keep the last value.
    public static func parse(_ data: Data) throws -> SentryJSON {
        try data.withUnsafeBytes { bytes in
            var parser = Parser(bytes: bytes)
            parser.skipWhitespace()
            let value = try parser.value(depth: 0)
            parser.skipWhitespace()
            guard parser.index == bytes.count else { throw parser.error("unexpected text after the value") }
            return value
        }
    }

    private struct Parser {
        let bytes: UnsafeRawBufferPointer
        var index = 0

        init(bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

        func error(_ reason: String) -> ParseError { ParseError(offset: index, reason: reason) }

        var current: UInt8? { index < bytes.count ? bytes[index] : nil }

        mutating func skipWhitespace() {
            while let byte = current, byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09 { index += 1 }
        }

        mutating func value(depth: Int) throws -> SentryJSON {
            guard let byte = current else { throw error("unexpected end of the text") }
            switch byte {
            case UInt8(ascii: "{"): return .object(try object(depth: depth + 1))
            case UInt8(ascii: "["): return .array(try array(depth: depth + 1))
            case UInt8(ascii: "\""): return .string(try string())
            case UInt8(ascii: "t"): return try literal("true", .bool(true))
            case UInt8(ascii: "f"): return try literal("false", .bool(false))
            case UInt8(ascii: "n"): return try literal("null", .null)
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(try number())
            default: throw error("unexpected character")
            }
        }

        mutating func literal(_ word: StaticString, _ value: SentryJSON) throws -> SentryJSON {
            let count = word.utf8CodeUnitCount
            guard index + count <= bytes.count else { throw error("unexpected end of the text") }
            for offset in 0..<count where bytes[index + offset] != word.utf8Start[offset] {
                throw error("unexpected character")
            }
            index += count
            return value
        }

        mutating func object(depth: Int) throws -> [String: SentryJSON] {
            guard depth <= SentryJSON.maxDepth else { throw error("nested deeper than \(SentryJSON.maxDepth)") }
            index += 1
            var members: [String: SentryJSON] = [:]
            skipWhitespace()
            if current == UInt8(ascii: "}") {
                index += 1
                return members
            }
            while true {
                skipWhitespace()
                // A comma before the end is accepted, as Foundation's decoder accepts it.
                if current == UInt8(ascii: "}") {
                    index += 1
                    return members
                }
                guard current == UInt8(ascii: "\"") else { throw error("expected a member name") }
                let name = try string()
                skipWhitespace()
                guard current == UInt8(ascii: ":") else { throw error("expected ':'") }
                index += 1
                skipWhitespace()
                members[name] = try value(depth: depth)
                skipWhitespace()
                switch current {
                case UInt8(ascii: ","): index += 1
                case UInt8(ascii: "}"):
                    index += 1
                    return members
                default: throw error("expected ',' or '}'")
                }
            }
        }

        mutating func array(depth: Int) throws -> [SentryJSON] {
            guard depth <= SentryJSON.maxDepth else { throw error("nested deeper than \(SentryJSON.maxDepth)") }
            index += 1
            var values: [SentryJSON] = []
            skipWhitespace()
            if current == UInt8(ascii: "]") {
                index += 1
                return values
            }
            while true {
                skipWhitespace()
                if current == UInt8(ascii: "]") {
                    index += 1
                    return values
                }
                values.append(try value(depth: depth))
                skipWhitespace()
                switch current {
                case UInt8(ascii: ","): index += 1
                case UInt8(ascii: "]"):
                    index += 1
                    return values
                default: throw error("expected ',' or ']'")
                }
            }
        }

        /// A string's text: the bytes between the quotes as they are when nothing is escaped.
        mutating func string() throws -> String {
            index += 1
            let start = index
            while let byte = current {
                switch byte {
                case UInt8(ascii: "\""):
                    let text = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
                    index += 1
                    return text
                case UInt8(ascii: "\\"):
                    return try escapedString(from: start)
                case 0..<0x20:
                    throw error("control character in a string")
                default:
                    index += 1
                }
            }
            throw error("unterminated string")
        }

        /// The rest of a string that has escapes, from its first byte at `start`.
        mutating func escapedString(from start: Int) throws -> String {
            var text = Array(bytes[start..<index])
            while let byte = current {
                index += 1
                switch byte {
                case UInt8(ascii: "\""):
                    return String(decoding: text, as: UTF8.self)
                case UInt8(ascii: "\\"):
                    guard let escaped = current else { throw error("unterminated string") }
                    index += 1
                    switch escaped {
                    case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): text.append(escaped)
                    case UInt8(ascii: "b"): text.append(0x08)
                    case UInt8(ascii: "f"): text.append(0x0C)
                    case UInt8(ascii: "n"): text.append(0x0A)
                    case UInt8(ascii: "r"): text.append(0x0D)
                    case UInt8(ascii: "t"): text.append(0x09)
                    case UInt8(ascii: "u"): text.append(contentsOf: String(try unicodeEscape()).utf8)
                    default: throw error("invalid escape")
                    }
                case 0..<0x20:
                    index -= 1
                    throw error("control character in a string")
                default:
                    text.append(byte)
                }
            }
            throw error("unterminated string")
        }

        /// The character of a `\uXXXX` escape (after its `u`), a surrogate pair taken whole; a surrogate
        /// without its other half is U+FFFD.
        mutating func unicodeEscape() throws -> Character {
            let first = try hexQuad()
            if (0xD800..<0xDC00).contains(first), index + 1 < bytes.count, bytes[index] == UInt8(ascii: "\\"),
                bytes[index + 1] == UInt8(ascii: "u")
            {
                let mark = index
                index += 2
                let second = try hexQuad()
                if (0xDC00..<0xE000).contains(second) {
                    let scalar = 0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00)
                    return Character(Unicode.Scalar(scalar) ?? "\u{FFFD}")
                }
                index = mark
            }
            return Character(Unicode.Scalar(first) ?? "\u{FFFD}")
        }

        mutating func hexQuad() throws -> UInt32 {
            guard index + 4 <= bytes.count else { throw error("unterminated string") }
            var value: UInt32 = 0
            for _ in 0..<4 {
                let byte = bytes[index]
                let digit: UInt8
                switch byte {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
                case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
                case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
                default: throw error("invalid \\u escape")
                }
                value = value << 4 | UInt32(digit)
                index += 1
            }
            return value
        }

        /// A number as RFC 8259 writes it: `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`.
        mutating func number() throws -> Double {
            let start = index
            if current == UInt8(ascii: "-") { index += 1 }
            if current == UInt8(ascii: "0") {
                index += 1
            } else {
                guard digits() > 0 else { throw error("invalid number") }
            }
            var isInteger = true
            if current == UInt8(ascii: ".") {
                index += 1
                isInteger = false
                guard digits() > 0 else { throw error("invalid number") }
            }
            if current == UInt8(ascii: "e") || current == UInt8(ascii: "E") {
                index += 1
                isInteger = false
                if current == UInt8(ascii: "+") || current == UInt8(ascii: "-") { index += 1 }
                guard digits() > 0 else { throw error("invalid number") }
            }
            let text = UnsafeRawBufferPointer(rebasing: bytes[start..<index])
            // Integers (line numbers, ids) are the most common: up to 16 characters fit an Int64, whose
            // conversion to Double rounds as parsing the text would.
            if isInteger, text.count <= 16 {
                var value: Int64 = 0
                for byte in text where byte != UInt8(ascii: "-") {
                    value = value * 10 + Int64(byte - UInt8(ascii: "0"))
                }
                return text.first == UInt8(ascii: "-") ? -Double(value) : Double(value)
            }
            guard let value = Double(String(decoding: text, as: UTF8.self)) else { throw error("invalid number") }
            return value
        }

        /// Skips decimal digits; returns how many.
        mutating func digits() -> Int {
            let start = index
            while let byte = current, byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") { index += 1 }
            return index - start
        }
    }
}
