import BlackboxFormat
import Foundation

/// Demangled Swift names as a reader wants them on a report page: what Swift's own backtracer prints
/// (`priceOfItem(at:)`), not the full signature llvm-symbolizer gives
/// (`bbapp.priceOfItem(at: Swift.Int) -> Swift.Int`). Hand-written: the runtime's demangler has no
/// simplified mode callable from here, and the names arrive already demangled (from the device or
/// llvm-symbolizer). Text that is not a Swift signature (C names) passes through unchanged.
enum SwiftNames {
    /// Compiler prefixes that say how a function was compiled, not what it is.
    private static let prefixes = [
        "merged ", "specialized ", "outlined ", "static ", "@objc ", "partial apply forwarder for ",
        "reabstraction thunk helper ", "dispatch thunk of ", "protocol witness for ",
    ]

    static func simplified(_ name: String) -> String {
        var text = Substring(InAppRules.withoutSpecializationMarkers(name))
        // `(1) suspend resume partial function for f()` / `(2) await resume partial function for f()`.
        if text.hasPrefix("("), let range = text.range(of: " partial function for ") {
            text = text[range.upperBound...]
        }
        var stripped = true
        while stripped {
            stripped = false
            for prefix in prefixes where text.hasPrefix(prefix) {
                text = text.dropFirst(prefix.count)
                stripped = true
            }
        }
        return simplify(Array(text))
    }

    /// One pass: parameter lists become their labels, generic clauses and closure signatures go, and
    /// so do effects and return types up to the next ` in ` (a closure's context) or the end. Linear in
    /// the name's length: every helper either advances `index` past what it reads or looks at a bounded
    /// tail of the output (names are hostile input: an 8 KB name arrives in a 1 KB upload).
    private static func simplify(_ characters: [Character]) -> String {
        var output: [Character] = []
        output.reserveCapacity(characters.count)
        var index = 0
        while index < characters.count {
            let character = characters[index]
            let previous = output.last
            if character == "<", let previous, isIdentifier(previous) {
                index = skipBalanced(characters, from: index, open: "<", close: ">")
            } else if character == "(", let previous, isIdentifier(previous) || previous == ">" {
                let end = skipBalanced(characters, from: index, open: "(", close: ")")
                output.append("(")
                output += labels(characters[(index + 1)..<max(index + 1, end - 1)])
                output.append(")")
                index = skipSignatureTail(characters, from: end)
            } else if character == "(", isClosureSignatureStart(output) {
                // A closure's signature: `closure #1 @Sendable (A) async -> B in f()`.
                index = skipSignatureTail(
                    characters, from: skipBalanced(characters, from: index, open: "(", close: ")"))
                while output.last == " " { output.removeLast() }
                for suffix in [" @Sendable", " :"] where output.ends(with: suffix) {
                    output.removeLast(suffix.count)
                }
            } else {
                output.append(character)
                index += 1
            }
        }
        return String(output).trimmingCharacters(in: .whitespaces)
    }

    /// After `closure #1 `, `closure #1 @Sendable ` or a getter's ` : `, a `(` opens a signature; after
    /// ` in ` it opens a context such as `(extension in Hummingbird):`. Reads at most the last two
    /// words, each only as far as it can match (`#` and a closure's number are short).
    private static func isClosureSignatureStart(_ output: [Character]) -> Bool {
        guard output.last == " " else { return false }
        var end = output.endIndex
        while end > output.startIndex, output[end - 1] == " " { end -= 1 }
        if end - 1 >= output.startIndex, output[end - 1] == ":", end - 1 == output.startIndex || output[end - 2] == " "
        {
            return true
        }
        if output[..<end].ends(with: " @Sendable") || output[..<end].elementsEqual("@Sendable") {
            end -= "@Sendable".count
            while end > output.startIndex, output[end - 1] == " " { end -= 1 }
        }
        return endsWithClosureNumber(output[..<end])
    }

    /// `…closure #12`: a word of `#` and digits ends the text (the only words of a demangled name that
    /// start with `#`).
    private static func endsWithClosureNumber(_ text: ArraySlice<Character>) -> Bool {
        var index = text.endIndex
        while index > text.startIndex, text[index - 1].isNumber, text.endIndex - index < maxClosureNumberDigits {
            index -= 1
        }
        guard index > text.startIndex, text[index - 1] == "#" else { return false }
        return index - 1 == text.startIndex || text[index - 2] == " "
    }

    private static let maxClosureNumberDigits = 20

    /// `at: Swift.Int, _: Foo, Swift.String` → `at:_:_:`.
    private static func labels(_ parameters: ArraySlice<Character>) -> [Character] {
        var labels: [Character] = []
        var depth = 0
        var current = ""
        func finish() {
            let part = current.trimmingCharacters(in: .whitespaces)
            guard !part.isEmpty else { return }
            if let colon = part.firstIndex(of: ":"), part[..<colon].allSatisfy({ isIdentifier($0) }) {
                labels += part[..<colon]
                labels.append(":")
            } else {
                labels += ["_", ":"]
            }
        }
        var previous: Character = " "
        for character in parameters {
            defer { previous = character }
            if "(<[".contains(character) { depth += 1 }
            if ")>]".contains(character), !(character == ">" && previous == "-") { depth -= 1 }
            if character == ",", depth == 0 {
                finish()
                current = ""
            } else {
                current.append(character)
            }
        }
        finish()
        return labels
    }

    /// Past ` async`, ` throws`, ` -> T` …: to the next top-level ` in ` (kept) or the end.
    private static func skipSignatureTail(_ characters: [Character], from start: Int) -> Int {
        var index = start
        var depth = 0
        while index < characters.count {
            let character = characters[index]
            if "(<[".contains(character) { depth += 1 }
            if ")>]".contains(character), !isArrow(characters, at: index) { depth -= 1 }
            if depth == 0, character == " ", index + 3 < characters.count, characters[index + 1] == "i",
                characters[index + 2] == "n", characters[index + 3] == " "
            {
                return index
            }
            if depth < 0 { return index }
            index += 1
        }
        return index
    }

    private static func skipBalanced(_ characters: [Character], from start: Int, open: Character, close: Character)
        -> Int
    {
        var depth = 0
        var index = start
        while index < characters.count {
            if characters[index] == open { depth += 1 }
            if characters[index] == close, !isArrow(characters, at: index) {
                depth -= 1
                if depth == 0 { return index + 1 }
            }
            index += 1
        }
        return characters.count
    }

    /// The `>` of `->`, which closes nothing.
    private static func isArrow(_ characters: [Character], at index: Int) -> Bool {
        characters[index] == ">" && index > 0 && characters[index - 1] == "-"
    }

    private static func isIdentifier(_ character: Character) -> Bool {
        character.isLetter || character.isNumber || character == "_" || character == "`" || character == "?"
            || character == "!"
    }
}

extension BidirectionalCollection where Element == Character {
    fileprivate func ends(with suffix: String) -> Bool {
        count >= suffix.count && zip(reversed(), suffix.reversed()).allSatisfy { $0 == $1 }
    }
}
