import Foundation
import PostgresNIO

/// `SymbolIndex`: symbol files by build-id.
extension PostgresStore {
    public func addSymbolFile(_ file: NewSymbolFile) async throws -> (record: SymbolFile, created: Bool) {
        // One statement: two instances storing the same file at once both answer with the one row.
        let rows = try await read(
            """
            WITH inserted AS (
                INSERT INTO symbol_files (project_id, build_id, file_name, size, sha256, blob, has_debug_info,
                    has_code, uploaded_at)
                VALUES (\(file.projectID), \(file.buildID), \(file.fileName), \(file.size), \(file.sha256),
                    \(file.blob), \(file.hasDebugInfo), \(file.hasCode), \(file.uploadedAt.timeIntervalSince1970))
                ON CONFLICT (project_id, build_id, sha256) DO NOTHING
                RETURNING *)
            SELECT *, true AS created FROM inserted
            UNION ALL
            SELECT *, false AS created FROM symbol_files
            WHERE project_id = \(file.projectID) AND build_id = \(file.buildID) AND sha256 = \(file.sha256)
            """
        ) { (record: try Self.symbolFile($0), created: try $0["created"].decode(Bool.self)) }
        if let created = rows.first(where: \.created) { return created }
        if let existing = rows.first { return existing }
        // The conflicting row was inserted by a transaction this statement's snapshot cannot see yet.
        guard
            let existing = try await symbolFiles(buildIDs: [file.buildID], in: ProjectScope(projectID: file.projectID))
                .first(where: { $0.sha256 == file.sha256 })
        else { throw StorageError.notFound("symbol file \(file.buildID)") }
        return (existing, false)
    }

    public func symbolFiles(buildIDs: [String], in scope: ProjectScope) async throws -> [SymbolFile] {
        guard !buildIDs.isEmpty else { return [] }
        return try await read(
            """
            SELECT * FROM symbol_files WHERE project_id = \(scope.projectID) AND build_id = ANY(\(buildIDs))
            ORDER BY build_id, uploaded_at
            """, Self.symbolFile)
    }

    public func symbolFiles(in scope: ProjectScope, page: Page) async throws -> [SymbolFile] {
        try await read(
            """
            SELECT * FROM symbol_files WHERE project_id = \(scope.projectID) ORDER BY uploaded_at DESC, id DESC
            LIMIT \(page.limit) OFFSET \(page.offset)
            """, Self.symbolFile)
    }

    public func deleteSymbolFiles(buildID: String, sha256: String?, in scope: ProjectScope) async throws
        -> [SymbolFile]
    {
        try await read(
            """
            DELETE FROM symbol_files WHERE project_id = \(scope.projectID) AND build_id = \(buildID)
                AND (\(sha256)::text IS NULL OR sha256 = \(sha256))
            RETURNING *
            """, Self.symbolFile)
    }

    public func referencedSymbolBlobs(_ blobs: [String]) async throws -> Set<String> {
        guard !blobs.isEmpty else { return [] }
        return Set(
            try await read("SELECT DISTINCT blob FROM symbol_files WHERE blob = ANY(\(blobs))") {
                try $0["blob"].decode(String.self)
            })
    }

    public func symbolUsage(projectID: Int64) async throws -> SymbolUsage {
        try await read(
            """
            SELECT count(*) AS files, CAST(coalesce(sum(size), 0) AS BIGINT) AS bytes FROM symbol_files
            WHERE project_id = \(projectID)
            """
        ) {
            SymbolUsage(files: Int(try $0["files"].decode(Int64.self)), bytes: try $0["bytes"].decode(Int64.self))
        }.first ?? SymbolUsage(files: 0, bytes: 0)
    }

    public func bundleBytes(projectID: Int64) async throws -> Int64 {
        try await read(
            "SELECT CAST(coalesce(sum(size), 0) AS BIGINT) AS bytes FROM bundles WHERE project_id = \(projectID)"
        ) { try $0["bytes"].decode(Int64.self) }.first ?? 0
    }

    static func symbolFile(_ row: PostgresRandomAccessRow) throws -> SymbolFile {
        SymbolFile(
            id: try row["id"].decode(Int64.self), projectID: try row["project_id"].decode(Int64.self),
            buildID: try row["build_id"].decode(String.self), fileName: try row["file_name"].decode(String.self),
            size: try row["size"].decode(Int64.self), sha256: try row["sha256"].decode(String.self),
            blob: try row["blob"].decode(String.self), hasDebugInfo: try row["has_debug_info"].decode(Bool.self),
            hasCode: try row["has_code"].decode(Bool.self),
            uploadedAt: Date(timeIntervalSince1970: try row["uploaded_at"].decode(Double.self)),
            symbolizerFailures: Int(try row["symbolizer_failures"].decode(Int64.self)))
    }
}
