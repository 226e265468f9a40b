import Foundation

/// `KeyStore`: projects and keys (a key's secret is kept as its hash).
extension SQLDatabase {
    public func createProject(name: String) async throws -> Project {
        let now = Date()
        guard
            let id = try await write("INSERT INTO projects (name, created_at) VALUES (\(name), \(now)) RETURNING id")
                .first?.decode("id", as: Int64.self)
        else { throw StorageError.notFound("new project") }
        return Project(id: id, name: name, createdAt: now)
    }

    public func projects() async throws -> [Project] {
        try await rows("SELECT id, name, created_at FROM projects ORDER BY id").map { row in
            Project(id: try row.decode("id"), name: try row.decode("name"), createdAt: try row.decode("created_at"))
        }
    }

    public func createKey(projectID: Int64, kind: APIKey.Kind, secret: String) async throws -> APIKey {
        let now = Date()
        let prefix = String(secret.prefix(8))
        guard
            let id = try await write(
                """
                INSERT INTO api_keys (project_id, kind, secret_hash, prefix, created_at)
                VALUES (\(projectID), \(kind.rawValue), \(APIKey.hash(secret)), \(prefix), \(now))
                RETURNING id
                """
            ).first?.decode("id", as: Int64.self)
        else { throw StorageError.notFound("new key") }
        return APIKey(id: id, projectID: projectID, kind: kind, prefix: prefix, createdAt: now, revokedAt: nil)
    }

    public func keys() async throws -> [APIKey] {
        try await rows("SELECT * FROM api_keys ORDER BY id").map(APIKey.init)
    }

    public func revokeKey(id: Int64) async throws -> Bool {
        try await !write(
            "UPDATE api_keys SET revoked_at = \(Date()) WHERE id = \(id) AND revoked_at IS NULL RETURNING id"
        ).isEmpty
    }

    public func authenticate(secret: String) async throws -> APIKey? {
        try await rows("SELECT * FROM api_keys WHERE secret_hash = \(APIKey.hash(secret)) AND revoked_at IS NULL")
            .first.map(APIKey.init)
    }
}

/// `SessionStore`: web sessions and one-time sign-in links.
extension SQLDatabase {
    public func createSession(tokenHash: String, keyID: Int64, kind: SessionKind, expiresAt: Date) async throws {
        let now = Date()
        try await write { connection in
            try connection.execute("DELETE FROM sessions WHERE expires_at < \(now)")
            try connection.execute(
                """
                INSERT INTO sessions (token_hash, key_id, kind, created_at, expires_at)
                VALUES (\(tokenHash), \(keyID), \(kind.rawValue), \(now), \(expiresAt))
                """)
        }
    }

    public func session(tokenHash: String, now: Date) async throws -> APIKey? {
        try await rows(
            """
            SELECT k.* FROM sessions s JOIN api_keys k ON k.id = s.key_id
            WHERE s.token_hash = \(tokenHash) AND s.kind = 'session' AND s.expires_at > \(now)
                AND k.revoked_at IS NULL
            """
        ).first.map(APIKey.init)
    }

    /// The link goes in the statement that reads it, so two instances redeeming it at once cannot
    /// both succeed.
    public func redeemLink(tokenHash: String, now: Date) async throws -> APIKey? {
        try await write { connection -> APIKey? in
            guard
                let link = try connection.row(
                    "DELETE FROM sessions WHERE token_hash = \(tokenHash) AND kind = 'link' RETURNING key_id, expires_at"
                ),
                try link.decode("expires_at", as: Date.self) > now
            else { return nil }
            return try connection.row(
                "SELECT * FROM api_keys WHERE id = \(try link.decode("key_id", as: Int64.self)) AND revoked_at IS NULL"
            ).map(APIKey.init)
        }
    }

    public func deleteSession(tokenHash: String) async throws {
        try await write("DELETE FROM sessions WHERE token_hash = \(tokenHash)")
    }
}
