import Crypto
import Foundation

/// First start: a project, an ingest key and an admin token, so that `make run` is usable at once.
/// The secrets are stored hashed; the plain ones are printed at that first start only (a log that
/// keeps stdout must not hold a long-lived admin token from every restart) and kept in
/// `<data>/bootstrap-credentials` (0600) for local use. Delete that file in production.
public struct Bootstrap: Sendable {
    public struct Credentials: Codable, Sendable {
        public var project: String
        public var ingestKey: String
        public var adminToken: String
        /// The project's id (the last part of its Sentry DSN).
        public var projectID: Int64?
        /// The DSN a Sentry SDK sends to this collector with (written once the address is known).
        public var sentryDSN: String?

        /// With the DSN for the collector at `publicURL`, written back to `path` (0600).
        public func withSentryDSN(publicURL: String, savedAt path: String) -> Credentials {
            var credentials = self
            guard let projectID else { return credentials }
            credentials.sentryDSN = SentryAuthentication.dsn(
                publicURL: publicURL, ingestKey: ingestKey, projectID: projectID)
            if let data = try? JSONEncoder().encode(credentials) {
                _ = FileManager.default.createFile(
                    atPath: path, contents: data, attributes: [.posixPermissions: 0o600])
            }
            return credentials
        }
    }

    public static func newSecret(_ prefix: String) -> String {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<24).map { _ in UInt8.random(in: 0...255, using: &generator) }
        return prefix
            + Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }

    /// What a start found or made.
    public struct Outcome: Sendable {
        /// The credentials file's contents, when it exists.
        public var credentials: Credentials?
        /// True when this start created them (the only start that prints them).
        public var created: Bool
        public var path: String
    }

    /// Creates the first project and keys when there is no project yet.
    public static func ensureFirstProject(store: any CollectorStore, dataDirectory: String) async throws -> Outcome {
        let path = "\(dataDirectory)/bootstrap-credentials"
        try await store.migrate()
        if try await store.projects().isEmpty {
            let project: Project
            do {
                project = try await store.createProject(name: "default")
            } catch {
                // Another instance on the same database created it first (names are unique): that
                // one prints the keys; this one starts without them.
                guard try await !store.projects().isEmpty else { throw error }
                return Outcome(credentials: nil, created: false, path: path)
            }
            let credentials = Credentials(
                project: project.name, ingestKey: newSecret("bbx_ingest_"), adminToken: newSecret("bbx_admin_"),
                projectID: project.id)
            _ = try await store.createKey(projectID: project.id, kind: .ingest, secret: credentials.ingestKey)
            _ = try await store.createKey(projectID: project.id, kind: .admin, secret: credentials.adminToken)
            let data = try JSONEncoder().encode(credentials)
            _ = FileManager.default.createFile(atPath: path, contents: data, attributes: [.posixPermissions: 0o600])
            return Outcome(credentials: credentials, created: true, path: path)
        }
        let saved = FileManager.default.contents(atPath: path).flatMap {
            try? JSONDecoder().decode(Credentials.self, from: $0)
        }
        return Outcome(credentials: saved, created: false, path: path)
    }
}
