import Foundation

/// Web sessions and one-time sign-in links, by the sha256 of their random token (`WebSessions`).
public protocol SessionStore: Sendable {
    /// Also drops expired sessions and links.
    func createSession(tokenHash: String, keyID: Int64, kind: SessionKind, expiresAt: Date) async throws
    /// The admin key a live session belongs to; nil once expired, ended, or its key revoked.
    func session(tokenHash: String, now: Date) async throws -> APIKey?
    /// A link's key, once: the link is deleted by the same call.
    func redeemLink(tokenHash: String, now: Date) async throws -> APIKey?
    func deleteSession(tokenHash: String) async throws
}
