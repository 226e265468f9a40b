import Foundation
import GRDB

/// `LogIndex`: log lines in FTS5, one rowid range per file.
extension SQLiteStore {
    public func unindexedLogFiles(limit: Int) async throws -> [BundleFile] {
        try await rows("SELECT * FROM bundle_files WHERE NOT indexed AND kind = 'log' ORDER BY id LIMIT \(limit)")
            .map(BundleFile.init)
    }

    public func storeLogLines(_ files: [LogFileLines]) async throws {
        try await pool.write { db in
            for file in files { try Self.storeLogLines(file, in: db) }
        }
    }

    static func storeLogLines(_ file: LogFileLines, in db: Database) throws {
        // The file may have been deleted by retention while its lines were being read: storing
        // them now would leave orphan index rows that nothing ever deletes.
        guard
            try db.cachedValue(Bool.self, sql: "SELECT 1 FROM bundle_files WHERE id = ?", arguments: [file.fileID])
                == true
        else {
            return
        }
        // Idempotent: storing a file again replaces its lines.
        let first = file.fileID << lineBits
        try db.executeCached(
            sql: "DELETE FROM log_lines WHERE rowid BETWEEN ? AND ?", arguments: [first, first + (1 << lineBits) - 1])
        let statement = try db.cachedStatement(
            sql: "INSERT INTO log_lines (rowid, text, file_id, line_number) VALUES (?, ?, ?, ?)")
        for (index, line) in file.lines.prefix(Int(1 << lineBits) - 1).enumerated() {
            try statement.execute(arguments: [first + Int64(index + 1), line, file.fileID, index + 1])
        }
        try db.executeCached(sql: "UPDATE bundle_files SET indexed = 1 WHERE id = ?", arguments: [file.fileID])
    }
}
