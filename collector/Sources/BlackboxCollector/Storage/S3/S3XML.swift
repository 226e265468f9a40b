import Foundation

/// An S3 answer's XML as a tree of elements: names, text and children; attributes, comments and the
/// prolog are skipped.
///
/// Written here rather than read with FoundationXML: that would make libxml2 a run-time dependency of
/// the collector for the handful of elements S3 answers with (`Key`, `Size`, `IsTruncated`,
/// `NextContinuationToken`, `UploadId`, `Code`, `Message`). Bounded like every input from the network:
/// the caller caps the bytes, and nesting deeper than `maxDepth` or a `<!DOCTYPE` (entity
/// definitions) is refused.
struct S3XML: Equatable {
    var name: String
    var text: String = ""
    var children: [S3XML] = []

    static let maxDepth = 32

    struct ParseError: Error, Equatable, CustomStringConvertible {
        var offset: Int
        var reason: String
        var description: String { "not XML S3 answers with (\(reason) at byte \(offset))" }
    }

    /// The first child named `name`.
    func child(_ name: String) -> S3XML? { children.first { $0.name == name } }

    /// Every child named `name`, in order.
    func children(_ name: String) -> [S3XML] { children.filter { $0.name == name } }

    /// The text of the first child named `name`.
    func text(_ name: String) -> String? { child(name)?.text }

    /// The document's root element.
    static func parse(_ data: Data) throws -> S3XML {
        var reader = Reader(bytes: Array(data))
        return try reader.document()
    }

    private struct Reader {
        let bytes: [UInt8]
        var index = 0

        func error(_ reason: String) -> ParseError { ParseError(offset: index, reason: reason) }

        /// Asked at every byte of text: compares in place, without copying either side.
        func starts(with text: StaticString) -> Bool {
            let count = text.utf8CodeUnitCount
            guard index + count <= bytes.count else { return false }
            return (0..<count).allSatisfy { bytes[index + $0] == text.utf8Start[$0] }
        }

        /// Moves past the next `terminator`.
        mutating func skip(past terminator: StaticString) throws {
            while index < bytes.count, !starts(with: terminator) { index += 1 }
            guard index < bytes.count else { throw error("unterminated \(terminator)") }
            index += terminator.utf8CodeUnitCount
        }

        /// Skips whitespace, the prolog and comments before or after the root.
        mutating func skipMisc() throws {
            while index < bytes.count {
                if bytes[index] == 0x20 || bytes[index] == 0x0A || bytes[index] == 0x0D || bytes[index] == 0x09 {
                    index += 1
                } else if starts(with: "<?") {
                    try skip(past: "?>")
                } else if starts(with: "<!--") {
                    try skip(past: "-->")
                } else {
                    return
                }
            }
        }

        mutating func document() throws -> S3XML {
            try skipMisc()
            guard !starts(with: "<!") else { throw error("a document type definition") }
            let root = try element(depth: 0)
            try skipMisc()
            guard index == bytes.count else { throw error("text after the root element") }
            return root
        }

        /// An element starting at `<`, through its end tag.
        mutating func element(depth: Int) throws -> S3XML {
            guard depth < S3XML.maxDepth else { throw error("nested deeper than \(S3XML.maxDepth)") }
            guard index < bytes.count, bytes[index] == UInt8(ascii: "<") else { throw error("an element expected") }
            index += 1
            let name = tagName()
            guard !name.isEmpty else { throw error("an element without a name") }
            // Attributes (`xmlns="…"`) are skipped; a quoted value may hold `>`.
            var quote: UInt8?
            while index < bytes.count {
                let byte = bytes[index]
                if let open = quote {
                    if byte == open { quote = nil }
                } else if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "'") {
                    quote = byte
                } else if byte == UInt8(ascii: ">") {
                    break
                }
                index += 1
            }
            guard index < bytes.count else { throw error("an unterminated tag") }
            index += 1
            var parsed = S3XML(name: name)
            if bytes[index - 2] == UInt8(ascii: "/") { return parsed }
            var text: [UInt8] = []
            while true {
                guard index < bytes.count else { throw error("<\(name)> not closed") }
                if starts(with: "</") {
                    index += 2
                    guard tagName() == name else { throw error("</…> does not close <\(name)>") }
                    while index < bytes.count, bytes[index] != UInt8(ascii: ">") { index += 1 }
                    guard index < bytes.count else { throw error("an unterminated end tag") }
                    index += 1
                    parsed.text = try Self.decodingEntities(text)
                    return parsed
                } else if starts(with: "<!--") {
                    try skip(past: "-->")
                } else if starts(with: "<![CDATA[") {
                    index += 9
                    let start = index
                    try skip(past: "]]>")
                    text += bytes[start..<index - 3]
                } else if bytes[index] == UInt8(ascii: "<") {
                    parsed.children.append(try element(depth: depth + 1))
                } else {
                    text.append(bytes[index])
                    index += 1
                }
            }
        }

        mutating func tagName() -> String {
            let start = index
            while index < bytes.count {
                let byte = bytes[index]
                if byte == UInt8(ascii: ">") || byte == UInt8(ascii: "/") || byte == 0x20 || byte == 0x0A
                    || byte == 0x0D || byte == 0x09
                {
                    break
                }
                index += 1
            }
            return String(decoding: bytes[start..<index], as: UTF8.self)
        }

        /// `&lt;` `&gt;` `&amp;` `&quot;` `&apos;` and numeric references; any other is refused.
        static func decodingEntities(_ text: [UInt8]) throws -> String {
            guard text.contains(UInt8(ascii: "&")) else { return String(decoding: text, as: UTF8.self) }
            var result = ""
            var rest = String(decoding: text, as: UTF8.self)[...]
            while let ampersand = rest.firstIndex(of: "&") {
                result += rest[..<ampersand]
                guard let semicolon = rest[ampersand...].firstIndex(of: ";") else {
                    throw ParseError(offset: 0, reason: "an unterminated entity")
                }
                let entity = rest[rest.index(after: ampersand)..<semicolon]
                switch entity {
                case "lt": result += "<"
                case "gt": result += ">"
                case "amp": result += "&"
                case "quot": result += "\""
                case "apos": result += "'"
                default:
                    let number =
                        entity.hasPrefix("#x")
                        ? UInt32(entity.dropFirst(2), radix: 16)
                        : entity.hasPrefix("#") ? UInt32(entity.dropFirst()) : nil
                    guard let number, let scalar = Unicode.Scalar(number) else {
                        throw ParseError(offset: 0, reason: "the unknown entity &\(entity.prefix(16));")
                    }
                    result.unicodeScalars.append(scalar)
                }
                rest = rest[rest.index(after: semicolon)...]
            }
            return result + rest
        }
    }
}
