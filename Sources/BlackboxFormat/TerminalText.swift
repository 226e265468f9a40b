extension String {
    /// The text with every control character (C0, DEL and C1, so ESC and BEL too), the Unicode line and
    /// paragraph separators and the bidirectional overrides escaped as `\n`, `\r`, `\t` or `\u{XX}`,
    /// as the log formatter escapes them: what a report carries (scopes, names, log lines, all of it
    /// from the app or the network) cannot forge a line or steer the terminal that shows it.
    public var escapedForTerminal: String {
        guard unicodeScalars.contains(where: Self.needsEscape) else { return self }
        var out = ""
        for scalar in unicodeScalars {
            switch scalar {
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where Self.needsEscape(scalar):
                out += "\\u{" + String(scalar.value, radix: 16, uppercase: true) + "}"
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    private static func needsEscape(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0..<0x20, 0x7F...0x9F, 0x2028, 0x2029, 0x202A...0x202E, 0x2066...0x2069: true
        default: false
        }
    }
}
