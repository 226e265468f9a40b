/// JSON text exactly as `JSONEncoder` writes it with `[.sortedKeys, .prettyPrinted,
/// .withoutEscapingSlashes]` (two-space indents, `"key" : value`, an empty container as an empty
/// line), for values that write themselves (`SortedJSONWritable`).
///
/// Hand-written because the collector encodes every stored report: `JSONEncoder` builds a tree of
/// boxed values, sorts every object's keys and then serializes, 13 % of the collector's CPU while it
/// stored Sentry events (perf, 2026-12-05). Writing straight into bytes, with each type listing its
/// keys in order, is several times cheaper. `CrashReportJSONTests` holds the output to
/// `JSONEncoder`'s byte for byte.
package struct SortedPrettyJSON {
    package private(set) var bytes: [UInt8] = []
    private var depth = 0
    /// Whether the container being written has a member yet (its separator, and an empty one's form).
    private var hasMembers = false

    package init() {
        bytes.reserveCapacity(4096)
    }

    /// An object whose `members` write their keys in `JSONEncoder`'s sorted order (UTF-8 bytes).
    package mutating func object(_ members: (inout SortedPrettyJSON) -> Void) {
        let outer = hasMembers
        open(UInt8(ascii: "{"))
        members(&self)
        close(UInt8(ascii: "}"), outer: outer)
    }

    package mutating func array<Element: SortedJSONWritable>(_ elements: [Element]) {
        let outer = hasMembers
        open(UInt8(ascii: "["))
        for element in elements {
            startMember()
            element.write(to: &self)
        }
        close(UInt8(ascii: "]"), outer: outer)
    }

    /// A member of the object being written; `name` must come after the previous member's in UTF-8
    /// byte order.
    package mutating func key(_ name: String) {
        startMember()
        string(name)
        bytes.append(contentsOf: " : ".utf8)
    }

    package mutating func member(_ name: String, _ value: some SortedJSONWritable) {
        key(name)
        value.write(to: &self)
    }

    /// Leaves out a nil, as synthesized `Encodable` conformances do (`encodeIfPresent`).
    package mutating func member(_ name: String, _ value: (some SortedJSONWritable)?) {
        guard let value else { return }
        member(name, value)
    }

    package mutating func member<Element: SortedJSONWritable>(_ name: String, _ elements: [Element]) {
        key(name)
        array(elements)
    }

    package mutating func member<Element: SortedJSONWritable>(_ name: String, _ elements: [Element]?) {
        guard let elements else { return }
        member(name, elements)
    }

    /// A dictionary, its keys sorted as `JSONEncoder` sorts them: by their UTF-8 bytes.
    package mutating func member(_ name: String, _ dictionary: [String: String]) {
        key(name)
        let sorted = dictionary.sorted { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }
        object { json in
            for (key, value) in sorted { json.member(key, value) }
        }
    }

    package mutating func member(_ name: String, _ dictionary: [String: String]?) {
        guard let dictionary else { return }
        member(name, dictionary)
    }

    package mutating func string(_ text: String) {
        bytes.append(UInt8(ascii: "\""))
        let copied = text.utf8.withContiguousStorageIfAvailable { utf8 in
            guard !utf8.contains(where: Self.needsEscaping) else { return false }
            bytes.append(contentsOf: utf8)
            return true
        }
        if copied != true { escape(text) }
        bytes.append(UInt8(ascii: "\""))
    }

    private static func needsEscaping(_ byte: UInt8) -> Bool {
        byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\")
    }

    private mutating func escape(_ text: String) {
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\""): bytes.append(contentsOf: #"\""#.utf8)
            case UInt8(ascii: "\\"): bytes.append(contentsOf: #"\\"#.utf8)
            case 0x0A: bytes.append(contentsOf: #"\n"#.utf8)
            case 0x0D: bytes.append(contentsOf: #"\r"#.utf8)
            case 0x09: bytes.append(contentsOf: #"\t"#.utf8)
            case 0x08: bytes.append(contentsOf: #"\b"#.utf8)
            case 0x0C: bytes.append(contentsOf: #"\f"#.utf8)
            case 0..<0x20:
                bytes.append(contentsOf: #"\u00"#.utf8)
                bytes.append(Self.hexDigits[Int(byte >> 4)])
                bytes.append(Self.hexDigits[Int(byte & 0xF)])
            default: bytes.append(byte)
            }
        }
    }

    package mutating func literal(_ text: String) {
        bytes.append(contentsOf: text.utf8)
    }

    private static let hexDigits = Array("0123456789abcdef".utf8)

    private mutating func open(_ bracket: UInt8) {
        bytes.append(bracket)
        depth += 1
        hasMembers = false
    }

    private mutating func close(_ bracket: UInt8, outer: Bool) {
        if !hasMembers { bytes.append(0x0A) }
        depth -= 1
        newLine()
        bytes.append(bracket)
        hasMembers = outer
    }

    private mutating func startMember() {
        if hasMembers { bytes.append(UInt8(ascii: ",")) }
        hasMembers = true
        newLine()
    }

    private mutating func newLine() {
        bytes.append(0x0A)
        bytes.append(contentsOf: repeatElement(UInt8(ascii: " "), count: 2 * depth))
    }
}

/// A value that writes itself as `JSONEncoder` would encode it (see `SortedPrettyJSON`).
package protocol SortedJSONWritable {
    func write(to json: inout SortedPrettyJSON)
}

extension String: SortedJSONWritable {
    package func write(to json: inout SortedPrettyJSON) { json.string(self) }
}

extension Bool: SortedJSONWritable {
    package func write(to json: inout SortedPrettyJSON) { json.literal(self ? "true" : "false") }
}

extension Int: SortedJSONWritable {
    package func write(to json: inout SortedPrettyJSON) { json.literal(String(self)) }
}

extension Int32: SortedJSONWritable {
    package func write(to json: inout SortedPrettyJSON) { json.literal(String(self)) }
}
