import Foundation
import GRDB

/// `ProjectReader.searchLogs` on FTS5.
extension SQLiteStore {
    /// Every word must appear (FTS5 syntax characters in the query are taken literally).
    static func matchExpression(_ query: String) -> String? {
        let terms = query.split(whereSeparator: { $0.isWhitespace }).map {
            "\"" + $0.replacingOccurrences(of: "\"", with: "\"\"") + "\""
        }
        return terms.isEmpty ? nil : terms.joined(separator: " ")
    }

    public func searchLogs(in scope: ProjectScope, query: String, page: Page) async throws -> [LogHit] {
        guard let match = Self.matchExpression(query) else { return [] }
        return try await pool.read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT l.rowid AS rowid, l.text AS text, f.id AS file_id, f.bundle_id AS bundle_id, f.path AS path
                    FROM log_lines l JOIN bundle_files f ON f.id = l.rowid >> 24 JOIN bundles b ON b.id = f.bundle_id
                    WHERE log_lines MATCH ? AND b.project_id = ?
                    ORDER BY l.rowid DESC LIMIT ? OFFSET ?
                    """,
                arguments: [match, scope.projectID, page.limit, page.offset]
            ).map { row in
                let rowid: Int64 = row["rowid"]
                return LogHit(
                    fileID: row["file_id"], bundleID: row["bundle_id"], path: row["path"],
                    lineNumber: Int(rowid & ((1 << Self.lineBits) - 1)), text: row["text"])
            }
        }
    }
}
