import BlackboxFormat
import Foundation

/// Makes the strings of an uploaded report or manifest fit to be indexed: NUL characters (which
/// PostgreSQL's text and jsonb refuse, so a retried upload would fail forever) become U+FFFD, and a
/// string longer than the limit is cut at a character boundary and marked. The raw bundle keeps the
/// original bytes; only what is indexed and shown is sanitized.
///
/// Hand-written over `JSONSerialization` rather than per type, so a new field of the formats is
/// covered without being named here; it runs only when the raw JSON could hold such a string (it is
/// larger than the limit, or contains an escaped NUL), which real reports almost never do.
struct FieldSanitizer {
    let maxFieldBytes: Int

    static let cutMarker = "…[cut]"

    /// `decoded` itself when `raw` cannot hold a NUL or an overlong string, else `raw` sanitized
    /// and decoded again with `decode`.
    func sanitized<T>(_ decoded: T, raw: Data, decode: (Data) throws -> T) throws -> T {
        guard needsSanitizing(raw) else { return decoded }
        return try resanitized(raw, decode: decode)
    }

    /// `raw` sanitized and decoded with `decode`, for a caller that asked `needsSanitizing` itself.
    func resanitized<T>(_ raw: Data, decode: (Data) throws -> T) throws -> T {
        let object = try JSONSerialization.jsonObject(with: raw, options: [.fragmentsAllowed])
        return try decode(try JSONSerialization.data(withJSONObject: sanitize(object), options: [.fragmentsAllowed]))
    }

    /// Whether `raw` could hold a NUL or an overlong string (else `sanitized` returns what it is given).
    func needsSanitizing(_ raw: Data) -> Bool {
        raw.count > maxFieldBytes || Self.containsEscapedNUL(raw)
    }

    /// A search of the bytes: `Data.range(of:)` was 1 % of the collector's CPU while it stored Sentry
    /// events (it runs on every report).
    static func containsEscapedNUL(_ raw: Data) -> Bool {
        raw.withUnsafeBytes { UTF8Search.contains(#"\u0000"#, inBytes: $0) }
    }

    func sanitize(_ value: Any) -> Any {
        switch value {
        case let text as String: return sanitize(text)
        case let array as [Any]: return array.map(sanitize)
        case let object as [String: Any]:
            return Dictionary(
                object.map { (sanitize($0.key), sanitize($0.value)) }, uniquingKeysWith: { first, _ in first })
        default: return value
        }
    }

    func sanitize(_ text: String) -> String {
        // `utf8.contains`, not `contains("\0")`: Foundation's substring search cost a microsecond a value.
        var text = text.utf8.contains(0) ? text.replacingOccurrences(of: "\0", with: "\u{FFFD}") : text
        guard text.utf8.count > maxFieldBytes else { return text }
        let budget = maxFieldBytes - Self.cutMarker.utf8.count
        var end = text.startIndex
        var used = 0
        for character in text {
            let size = character.utf8.count
            if used + size > budget { break }
            used += size
            end = text.index(after: end)
        }
        text = String(text[..<end]) + Self.cutMarker
        return text
    }
}
