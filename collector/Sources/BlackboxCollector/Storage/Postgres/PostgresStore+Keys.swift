import Foundation
import PostgresNIO

/// `KeyStore`: projects and keys (a key's secret is kept as its hash).
extension PostgresStore {
    public func createProject(name: String) async throws -> Project {
        let now = Date()
        let ids = try await read(
            "INSERT INTO projects (name, created_at) VALUES (\(name), \(now.timeIntervalSince1970)) RETURNING id"
        ) { try $0["id"].decode(Int64.self) }
        guard let id = ids.first else { throw StorageError.notFound("new project") }
        return Project(id: id, name: name, createdAt: now)
    }

    public func projects() async throws -> [Project] {
        try await read("SELECT id, name, created_at FROM projects ORDER BY id") {
            Project(
                id: try $0["id"].decode(Int64.self), name: try $0["name"].decode(String.self),
                createdAt: Date(timeIntervalSince1970: try $0["created_at"].decode(Double.self)))
        }
    }

    public func createKey(projectID: Int64, kind: APIKey.Kind, secret: String) async throws -> APIKey {
        let now = Date()
        let prefix = String(secret.prefix(8))
        let ids = try await read(
            """
            INSERT INTO api_keys (project_id, kind, secret_hash, prefix, created_at)
            VALUES (\(projectID), \(kind.rawValue), \(APIKey.hash(secret)), \(prefix), \(now.timeIntervalSince1970))
            RETURNING id
            """
        ) { try $0["id"].decode(Int64.self) }
        guard let id = ids.first else { throw StorageError.notFound("new key") }
        return APIKey(id: id, projectID: projectID, kind: kind, prefix: prefix, createdAt: now, revokedAt: nil)
    }

    public func keys() async throws -> [APIKey] {
        try await read("SELECT * FROM api_keys ORDER BY id", Self.key)
    }

    public func revokeKey(id: Int64) async throws -> Bool {
        let revoked = try await read(
            """
            UPDATE api_keys SET revoked_at = \(Date().timeIntervalSince1970)
            WHERE id = \(id) AND revoked_at IS NULL RETURNING id
            """
        ) { try $0["id"].decode(Int64.self) }
        return !revoked.isEmpty
    }

    public func authenticate(secret: String) async throws -> APIKey? {
        try await read(
            "SELECT * FROM api_keys WHERE secret_hash = \(APIKey.hash(secret)) AND revoked_at IS NULL", Self.key
        ).first
    }
}
