import GRDB

/// How Codable records meet the schema's columns: `project_id` is the property `projectID`,
/// `has_debug_info` is `hasDebugInfo` (Swift's naming, where an `id` word is `ID`; GRDB's
/// `convertFromSnakeCase` would look for `projectId`).
enum SQLiteColumns {
    static let decoding = DatabaseColumnDecodingStrategy.custom { column in
        let words = column.split(separator: "_")
        let name =
            (words.first.map(String.init) ?? "")
            + words.dropFirst().map { $0 == "id" ? "ID" : $0.prefix(1).uppercased() + $0.dropFirst() }.joined()
        return Key(stringValue: name)
    }

    private struct Key: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }
}
