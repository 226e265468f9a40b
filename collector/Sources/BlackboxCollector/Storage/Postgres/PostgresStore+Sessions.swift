import Foundation
import PostgresNIO

/// `SessionStore`: web sessions and one-time sign-in links.
extension PostgresStore {
    public func createSession(tokenHash: String, keyID: Int64, kind: SessionKind, expiresAt: Date) async throws {
        let now = Date().timeIntervalSince1970
        try await transaction { connection, logger in
            try await connection.query("DELETE FROM sessions WHERE expires_at < \(now)", logger: logger)
            try await connection.query(
                """
                INSERT INTO sessions (token_hash, key_id, kind, created_at, expires_at)
                VALUES (\(tokenHash), \(keyID), \(kind.rawValue), \(now), \(expiresAt.timeIntervalSince1970))
                """, logger: logger)
        }
    }

    public func session(tokenHash: String, now: Date) async throws -> APIKey? {
        try await read(
            """
            SELECT k.* FROM sessions s JOIN api_keys k ON k.id = s.key_id
            WHERE s.token_hash = \(tokenHash) AND s.kind = 'session' AND s.expires_at > \(now.timeIntervalSince1970)
                AND k.revoked_at IS NULL
            """, Self.key
        ).first
    }

    /// One statement, so that two instances redeeming the same link at once cannot both succeed.
    public func redeemLink(tokenHash: String, now: Date) async throws -> APIKey? {
        try await read(
            """
            WITH link AS (
                DELETE FROM sessions WHERE token_hash = \(tokenHash) AND kind = 'link'
                RETURNING key_id, expires_at)
            SELECT k.* FROM link JOIN api_keys k ON k.id = link.key_id
            WHERE link.expires_at > \(now.timeIntervalSince1970) AND k.revoked_at IS NULL
            """, Self.key
        ).first
    }

    public func deleteSession(tokenHash: String) async throws {
        _ = try await read("DELETE FROM sessions WHERE token_hash = \(tokenHash) RETURNING key_id") {
            try $0["key_id"].decode(Int64.self)
        }
    }
}
