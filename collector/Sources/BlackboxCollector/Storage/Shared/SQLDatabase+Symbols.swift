import Foundation

/// `SymbolIndex`: symbol files by build-id; and `UsageStore`.
extension SQLDatabase {
    /// Two instances storing the same file at once both answer with the one row: the second insert
    /// waits for the first and does nothing, and the select after it sees the committed row.
    public func addSymbolFile(_ file: NewSymbolFile) async throws -> (record: SymbolFile, created: Bool) {
        try await write { connection in
            if let row = try connection.row(
                """
                INSERT INTO symbol_files (project_id, build_id, file_name, size, sha256, sha1, blob, has_debug_info,
                    has_code, has_sources, uploaded_at)
                VALUES (\(file.projectID), \(file.buildID), \(file.fileName), \(file.size), \(file.sha256),
                    \(file.sha1), \(file.blob), \(file.hasDebugInfo), \(file.hasCode), \(file.hasSources),
                    \(file.uploadedAt))
                ON CONFLICT (project_id, build_id, sha256) DO NOTHING
                RETURNING *
                """)
            {
                return (try SymbolFile(row: row), true)
            }
            guard
                let row = try connection.row(
                    """
                    SELECT * FROM symbol_files
                    WHERE project_id = \(file.projectID) AND build_id = \(file.buildID) AND sha256 = \(file.sha256)
                    """)
            else { throw StorageError.notFound("symbol file \(file.buildID)") }
            return (try SymbolFile(row: row), false)
        }
    }

    public func symbolFile(sha1: String, in scope: ProjectScope) async throws -> SymbolFile? {
        try await rows(
            "SELECT * FROM symbol_files WHERE project_id = \(scope.projectID) AND sha1 = \(sha1) ORDER BY id LIMIT 1"
        ).first.map(SymbolFile.init)
    }

    public func symbolFiles(buildIDs: [String], in scope: ProjectScope) async throws -> [SymbolFile] {
        guard !buildIDs.isEmpty else { return [] }
        return try await rows(
            """
            SELECT * FROM symbol_files WHERE project_id = \(scope.projectID) AND build_id IN (\(list: buildIDs))
            ORDER BY build_id, uploaded_at
            """
        ).map(SymbolFile.init)
    }

    public func symbolFiles(in scope: ProjectScope, page: Page) async throws -> [SymbolFile] {
        try await rows(
            """
            SELECT * FROM symbol_files WHERE project_id = \(scope.projectID) ORDER BY uploaded_at DESC, id DESC
            LIMIT \(page.limit) OFFSET \(page.offset)
            """
        ).map(SymbolFile.init)
    }

    public func deleteSymbolFiles(buildID: String, sha256: String?, in scope: ProjectScope) async throws
        -> [SymbolFile]
    {
        try await write(
            """
            DELETE FROM symbol_files WHERE project_id = \(scope.projectID) AND build_id = \(buildID)
                AND (\(sha256)\(.cast(.text)) IS NULL OR sha256 = \(sha256))
            RETURNING *
            """
        ).map(SymbolFile.init)
    }

    public func referencedSymbolBlobs(_ blobs: [String]) async throws -> Set<String> {
        var referenced: Set<String> = []
        for chunk in blobs.chunked(500) {
            for row in try await rows("SELECT DISTINCT blob FROM symbol_files WHERE blob IN (\(list: chunk))") {
                referenced.insert(try row.decode("blob"))
            }
        }
        return referenced
    }

    public func symbolUsage(projectID: Int64) async throws -> SymbolUsage {
        guard
            let row = try await rows(
                """
                SELECT count(*) AS files, CAST(coalesce(sum(size), 0) AS BIGINT) AS bytes FROM symbol_files
                WHERE project_id = \(projectID)
                """
            ).first
        else { return SymbolUsage(files: 0, bytes: 0) }
        return SymbolUsage(files: try row.decode("files"), bytes: try row.decode("bytes"))
    }

    public func bundleBytes(projectID: Int64) async throws -> Int64 {
        try await rows(
            "SELECT CAST(coalesce(sum(size), 0) AS BIGINT) AS bytes FROM bundles WHERE project_id = \(projectID)"
        ).first?.decode("bytes") ?? 0
    }
}
