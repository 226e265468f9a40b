import Foundation
import GRDB

/// `KeyStore`: projects and keys (a key's secret is kept as its hash).
extension SQLiteStore {
    public func createProject(name: String) async throws -> Project {
        try await pool.write { db in
            let now = Date()
            try db.execute(
                sql: "INSERT INTO projects (name, created_at) VALUES (?, ?)",
                arguments: [name, now.timeIntervalSince1970])
            return Project(id: db.lastInsertedRowID, name: name, createdAt: now)
        }
    }

    public func projects() async throws -> [Project] {
        try await pool.read { db in
            try Row.fetchAll(db, sql: "SELECT id, name, created_at FROM projects ORDER BY id").map {
                Project(id: $0["id"], name: $0["name"], createdAt: Date(timeIntervalSince1970: $0["created_at"]))
            }
        }
    }

    public func createKey(projectID: Int64, kind: APIKey.Kind, secret: String) async throws -> APIKey {
        try await pool.write { db in
            let now = Date()
            let prefix = String(secret.prefix(8))
            try db.execute(
                sql: "INSERT INTO api_keys (project_id, kind, secret_hash, prefix, created_at) VALUES (?, ?, ?, ?, ?)",
                arguments: [projectID, kind.rawValue, APIKey.hash(secret), prefix, now.timeIntervalSince1970])
            return APIKey(
                id: db.lastInsertedRowID, projectID: projectID, kind: kind, prefix: prefix, createdAt: now,
                revokedAt: nil)
        }
    }

    public func keys() async throws -> [APIKey] {
        try await pool.read { db in try Row.fetchAll(db, sql: "SELECT * FROM api_keys ORDER BY id").map(Self.key) }
    }

    public func revokeKey(id: Int64) async throws -> Bool {
        try await pool.write { db in
            try db.execute(
                sql: "UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL",
                arguments: [Date().timeIntervalSince1970, id])
            return db.changesCount > 0
        }
    }

    public func authenticate(secret: String) async throws -> APIKey? {
        try await pool.read { db in
            try db.cachedRow(
                sql: "SELECT * FROM api_keys WHERE secret_hash = ? AND revoked_at IS NULL",
                arguments: [APIKey.hash(secret)]
            ).map(Self.key)
        }
    }
}
