import Crypto
import Foundation

/// A project's credential: an ingest key ships inside apps, an admin key reads, a symbols key archives
/// symbols from a build machine.
public struct APIKey: Codable, Sendable, Equatable {
    public enum Kind: String, Codable, Sendable {
        /// May upload bundles, nothing else.
        case ingest
        /// May read everything (API and web UI) and upload.
        case admin
        /// May upload and download symbol files (a release pipeline, a debugger), nothing else.
        case symbols
    }
    public var id: Int64
    public var projectID: Int64
    public var kind: Kind
    /// The first characters of the secret, to tell keys apart in listings.
    public var prefix: String
    public var createdAt: Date
    public var revokedAt: Date?
}

extension APIKey {
    /// What a store keeps of a secret (and of a web session's token): its sha256, never the secret.
    static func hash(_ secret: String) -> String {
        SHA256.hash(data: Data(secret.utf8)).lowercaseHex
    }
}
