import Foundation
import GRDB

/// `SymbolIndex`: symbol files by build-id. Rows decode straight into `SymbolFile` (Codable, see
/// `SQLiteColumns`).
extension SQLiteStore {
    public func addSymbolFile(_ file: NewSymbolFile) async throws -> (record: SymbolFile, created: Bool) {
        try await pool.write { db in
            try db.execute(
                sql: """
                    INSERT INTO symbol_files (project_id, build_id, file_name, size, sha256, blob, has_debug_info,
                        has_code, uploaded_at)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
                    ON CONFLICT (project_id, build_id, sha256) DO NOTHING
                    """,
                arguments: [
                    file.projectID, file.buildID, file.fileName, file.size, file.sha256, file.blob, file.hasDebugInfo,
                    file.hasCode, file.uploadedAt.timeIntervalSince1970,
                ])
            let created = db.changesCount > 0
            guard
                let record = try SymbolFile.fetchOne(
                    db,
                    sql: "SELECT * FROM symbol_files WHERE project_id = ? AND build_id = ? AND sha256 = ?",
                    arguments: [file.projectID, file.buildID, file.sha256])
            else { throw StorageError.notFound("symbol file \(file.buildID)") }
            return (record, created)
        }
    }

    public func symbolFiles(buildIDs: [String], in scope: ProjectScope) async throws -> [SymbolFile] {
        guard !buildIDs.isEmpty else { return [] }
        return try await pool.read { db in
            try SymbolFile.fetchAll(
                db,
                sql: """
                    SELECT * FROM symbol_files WHERE project_id = ? AND build_id IN (SELECT value FROM json_each(?))
                    ORDER BY build_id, uploaded_at
                    """,
                arguments: [scope.projectID, String(decoding: try JSONEncoder().encode(buildIDs), as: UTF8.self)])
        }
    }

    public func symbolFiles(in scope: ProjectScope, page: Page) async throws -> [SymbolFile] {
        try await pool.read { db in
            try SymbolFile.fetchAll(
                db,
                sql: """
                    SELECT * FROM symbol_files WHERE project_id = ? ORDER BY uploaded_at DESC, id DESC
                    LIMIT ? OFFSET ?
                    """,
                arguments: [scope.projectID, page.limit, page.offset])
        }
    }

    public func deleteSymbolFiles(buildID: String, sha256: String?, in scope: ProjectScope) async throws
        -> [SymbolFile]
    {
        try await pool.write { db in
            try SymbolFile.fetchAll(
                db,
                sql: """
                    DELETE FROM symbol_files WHERE project_id = ? AND build_id = ? AND (? IS NULL OR sha256 = ?)
                    RETURNING *
                    """,
                arguments: [scope.projectID, buildID, sha256, sha256])
        }
    }

    public func referencedSymbolBlobs(_ blobs: [String]) async throws -> Set<String> {
        guard !blobs.isEmpty else { return [] }
        return try await pool.read { db in
            Set(
                try String.fetchAll(
                    db,
                    sql: "SELECT DISTINCT blob FROM symbol_files WHERE blob IN (SELECT value FROM json_each(?))",
                    arguments: [String(decoding: try JSONEncoder().encode(blobs), as: UTF8.self)]))
        }
    }

    public func symbolUsage(projectID: Int64) async throws -> SymbolUsage {
        try await pool.read { db in
            let row = try Row.fetchOne(
                db,
                sql: "SELECT count(*) AS files, coalesce(sum(size), 0) AS bytes FROM symbol_files WHERE project_id = ?",
                arguments: [projectID])
            return SymbolUsage(files: row?["files"] ?? 0, bytes: row?["bytes"] ?? 0)
        }
    }

    public func bundleBytes(projectID: Int64) async throws -> Int64 {
        try await pool.read { db in
            try Int64.fetchOne(
                db, sql: "SELECT coalesce(sum(size), 0) FROM bundles WHERE project_id = ?", arguments: [projectID]) ?? 0
        }
    }
}

extension SymbolFile: FetchableRecord {
    public static var databaseColumnDecodingStrategy: DatabaseColumnDecodingStrategy { SQLiteColumns.decoding }
    public static var databaseDateDecodingStrategy: DatabaseDateDecodingStrategy { .timeIntervalSince1970 }
}
