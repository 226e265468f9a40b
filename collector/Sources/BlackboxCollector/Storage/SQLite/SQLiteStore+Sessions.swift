import Foundation
import GRDB

/// `SessionStore`: web sessions and one-time sign-in links.
extension SQLiteStore {
    public func createSession(tokenHash: String, keyID: Int64, kind: SessionKind, expiresAt: Date) async throws {
        let now = Date().timeIntervalSince1970
        try await pool.write { db in
            try db.execute(sql: "DELETE FROM sessions WHERE expires_at < ?", arguments: [now])
            try db.execute(
                sql: "INSERT INTO sessions (token_hash, key_id, kind, created_at, expires_at) VALUES (?, ?, ?, ?, ?)",
                arguments: [tokenHash, keyID, kind.rawValue, now, expiresAt.timeIntervalSince1970])
        }
    }

    public func session(tokenHash: String, now: Date) async throws -> APIKey? {
        try await pool.read { db in
            try db.cachedRow(
                sql: """
                    SELECT k.* FROM sessions s JOIN api_keys k ON k.id = s.key_id
                    WHERE s.token_hash = ? AND s.kind = 'session' AND s.expires_at > ? AND k.revoked_at IS NULL
                    """,
                arguments: [tokenHash, now.timeIntervalSince1970]
            ).map(Self.key)
        }
    }

    public func redeemLink(tokenHash: String, now: Date) async throws -> APIKey? {
        try await pool.write { db in
            let key = try Row.fetchOne(
                db,
                sql: """
                    SELECT k.* FROM sessions s JOIN api_keys k ON k.id = s.key_id
                    WHERE s.token_hash = ? AND s.kind = 'link' AND s.expires_at > ? AND k.revoked_at IS NULL
                    """,
                arguments: [tokenHash, now.timeIntervalSince1970]
            ).map(Self.key)
            try db.execute(sql: "DELETE FROM sessions WHERE token_hash = ? AND kind = 'link'", arguments: [tokenHash])
            return key
        }
    }

    public func deleteSession(tokenHash: String) async throws {
        try await pool.write { db in
            try db.execute(sql: "DELETE FROM sessions WHERE token_hash = ?", arguments: [tokenHash])
        }
    }
}
