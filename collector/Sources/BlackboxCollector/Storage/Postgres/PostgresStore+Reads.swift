import Foundation
import PostgresNIO

/// `ProjectReader.searchLogs` on a `tsvector` index.
extension PostgresStore {
    /// Every word must appear: `plainto_tsquery` ANDs the words and takes operators literally.
    public func searchLogs(in scope: ProjectScope, query: String, page: Page) async throws -> [LogHit] {
        guard query.contains(where: { !$0.isWhitespace }) else { return [] }
        return try await rows(
            """
            SELECT l.file_id, l.line_number, l.text, f.bundle_id, f.path
            FROM log_lines l JOIN bundle_files f ON f.id = l.file_id JOIN bundles b ON b.id = f.bundle_id
            WHERE l.tsv @@ plainto_tsquery('simple', \(query)) AND b.project_id = \(scope.projectID)
            ORDER BY l.file_id DESC, l.line_number DESC LIMIT \(page.limit) OFFSET \(page.offset)
            """
        ).map { row in
            LogHit(
                fileID: try row.decode("file_id"), bundleID: try row.decode("bundle_id"), path: try row.decode("path"),
                lineNumber: try row.decode("line_number"), text: try row.decode("text"))
        }
    }
}
