import BlackboxTestSupport
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import Synchronization
import Testing

@testable import BlackboxCollector

/// A collector's routes in Hummingbird's router mode: the store, the router and what answering needs
/// running (the group committer), but no socket, no connection and no background work (indexing,
/// symbolication, alerts, retention, regrouping: their first turns at start-up, waited for at the
/// end, were half a test's time); each request goes straight to the router. For route tests where a
/// connection proves nothing (what a page or an answer holds, which credential opens what), not for
/// tests of limits, connections, streaming or background work (`TestCollector`).
struct RouterCollector {
    let client: any TestClientProtocol
    let server: CollectorServer
    let ingestKey: String
    let adminToken: String
    /// The authority router mode gives every request.
    static let authority = "localhost"

    /// What a route answered.
    struct Answer {
        var status: Int
        var headers: HTTPFields
        var body: String

        var location: String? { headers[.location] }
        var json: [String: Any] {
            (try? JSONSerialization.jsonObject(with: Data(body.utf8))) as? [String: Any] ?? [:]
        }
    }

    /// Runs `body` against a new collector on a SQLite store in a temporary directory, removed after.
    static func run<Value: Sendable>(
        configure: (inout CollectorConfiguration) -> Void = { _ in },
        _ body: @Sendable (RouterCollector) async throws -> Value
    ) async throws -> Value {
        let scratch = TemporaryDirectory(prefix: "collector-router-test")
        defer { scratch.remove() }
        let template = try await StoreTemplate.shared.value
        try template.copy(into: scratch.path)
        var configuration = CollectorConfiguration(dataDirectory: scratch.path)
        configuration.retentionDays = nil
        configure(&configuration)
        let server = try CollectorServer(configuration: configuration)
        let credentials = template.credentials
        try await server.prepare()
        let app = Application(
            router: try await server.makeRouter(), services: server.services(includingBackground: false))
        return try await app.test(.router) { client in
            try await body(
                RouterCollector(
                    client: client, server: server, ingestKey: credentials.ingestKey,
                    adminToken: credentials.adminToken))
        }
    }

    func send(
        _ path: String, method: HTTPRequest.Method = .get, headers: [(String, String)] = [], body: Data? = nil
    ) async throws -> Answer {
        var fields = HTTPFields()
        for (name, value) in headers {
            guard let name = HTTPField.Name(name) else { continue }
            fields.append(HTTPField(name: name, value: value))
        }
        let response = try await client.executeRequest(
            uri: path, method: method, headers: fields, body: body.map { ByteBuffer(bytes: $0) })
        return Answer(status: Int(response.status.code), headers: response.headers, body: String(buffer: response.body))
    }

    /// A zip bundle through `POST /api/v1/bundles` with the ingest key.
    func upload(_ bundle: Data) async throws -> Answer {
        try await send(
            "/api/v1/bundles", method: .post,
            headers: [
                ("Content-Type", "application/zip"), ("Authorization", "Bearer \(ingestKey)"),
                ("Upload-Id", UUID().uuidString),
            ], body: bundle)
    }

    /// A read route with the admin token.
    func get(_ path: String) async throws -> Answer {
        try await send(path, headers: [("Authorization", "Bearer \(adminToken)")])
    }
}

/// A migrated store with the first project and its keys, made once per test process and copied into
/// each router test's directory: migrating a new database (every schema version its own durable
/// transaction) and creating the keys took most of a router test's time.
struct StoreTemplate: Sendable {
    let directory: TemporaryDirectory
    /// The first project's keys, the same in every copy.
    let credentials: Bootstrap.Credentials
    static let files = ["collector.sqlite", "bootstrap-credentials"]

    static let shared = Task { try await StoreTemplate() }
    /// Removed when the test process exits (the template lives as long as it).
    private static let madePath = Mutex<String?>(nil)

    private init() async throws {
        let directory = TemporaryDirectory(prefix: "collector-router-template")
        Self.madePath.withLock { $0 = directory.path }
        atexit {
            if let path = StoreTemplate.madePath.withLock({ $0 }) { try? FileManager.default.removeItem(atPath: path) }
        }
        let configuration = CollectorConfiguration(dataDirectory: directory.path)
        let store = try SQLiteStore(path: configuration.databasePath)
        let credentials = try #require(
            try await Bootstrap.ensureFirstProject(store: store, dataDirectory: directory.path).credentials)
        // Everything into the database file, so that the file alone is the store.
        _ = try await store.pool.writeWithoutTransaction { try $0.checkpoint(.truncate) }
        self.directory = directory
        self.credentials = credentials
    }

    func copy(into destination: String) throws {
        for file in Self.files {
            try FileManager.default.copyItem(atPath: "\(directory.path)/\(file)", toPath: "\(destination)/\(file)")
        }
    }
}
