/// The words of a log search as people type them, made safe for both stores: control characters
/// (a NUL made SQLite's query syntax and PostgreSQL's text parameters fail with 500) become spaces,
/// and the length is bounded.
enum SearchQuery {
    static let maxBytes = 512

    enum Problem: Error {
        case empty, tooLong
    }

    static func normalized(_ raw: String) -> Result<String, Problem> {
        let cleaned = String(
            String.UnicodeScalarView(raw.unicodeScalars.map { $0.properties.generalCategory == .control ? " " : $0 }))
        guard cleaned.utf8.count <= maxBytes else { return .failure(.tooLong) }
        guard cleaned.contains(where: { !$0.isWhitespace }) else { return .failure(.empty) }
        return .success(cleaned)
    }
}
