/// Projects and their keys. Operator commands write here; authentication reads.
public protocol KeyStore: Sendable {
    func createProject(name: String) async throws -> Project
    func projects() async throws -> [Project]
    /// Stores `APIKey.hash(secret)`, never the secret itself.
    func createKey(projectID: Int64, kind: APIKey.Kind, secret: String) async throws -> APIKey
    func keys() async throws -> [APIKey]
    func revokeKey(id: Int64) async throws -> Bool
    /// The live (not revoked) key with this secret.
    func authenticate(secret: String) async throws -> APIKey?
}
