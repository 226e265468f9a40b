/// A trace id as reports carry it in their scope (from swift-distributed-tracing's context: W3C's 32
/// hex digits, or whatever the app's tracer uses). It comes from the app, so it is hostile until
/// checked: only short ids of safe characters are indexed; any other value stays in the report's JSON.
enum TraceID {
    static let maxLength = 64

    /// The id, when it is 1-64 characters of letters, digits, `-`, `_`, `.` and `:`.
    static func checked(_ value: String) -> String? {
        guard !value.isEmpty, value.utf8.count <= maxLength,
            value.utf8.allSatisfy({ byte in
                (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
                    || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: ".")
                    || byte == UInt8(ascii: ":")
            })
        else { return nil }
        return value
    }
}
