import BlackboxTestSupport
import CollectorTestSupport
import Foundation
import Testing

@testable import BlackboxCollector

/// The `blackbox-collector` command's management subcommands, run as a process.
@Suite("Management commands")
struct ManagementCommandTests {
    func collector(_ arguments: [String]) throws -> (status: Int32, output: String) {
        let (status, output) = try ChildRun.run(CollectorProcess.executable, arguments)
        return (status, String(decoding: output, as: UTF8.self))
    }

    @Test("the first start prints the keys; later starts print where they are, never the secrets again")
    func keysPrintedOnce() async throws {
        let scratch = TemporaryDirectory(prefix: "collector-banner")
        defer { scratch.remove() }
        let first = try await CollectorProcess.start(dataDirectory: scratch.path)
        #expect(!first.adminToken.isEmpty && first.banner.contains(first.adminToken), "\(first.banner)")
        #expect(first.banner.contains(first.ingestKey))
        // The Sentry DSN: the ingest key as the public key, the first project's id, the bound port.
        let dsn = "http://\(first.ingestKey)@\(first.baseURL.dropFirst("http://".count))/1"
        #expect(first.banner.contains("Sentry DSN:   \(dsn)"), "\(first.banner)")
        let saved = try #require(FileManager.default.contents(atPath: "\(scratch.path)/bootstrap-credentials"))
        #expect((try JSONSerialization.jsonObject(with: saved) as? [String: Any])?["sentryDSN"] as? String == dsn)
        first.kill(SIGTERM)
        let second = try await CollectorProcess.start(dataDirectory: scratch.path)
        defer { second.kill(SIGTERM) }
        #expect(
            !second.banner.contains(first.adminToken) && !second.banner.contains(first.ingestKey), "\(second.banner)")
        #expect(second.banner.contains("printed at the first start only"), "\(second.banner)")
        #expect(second.adminToken == first.adminToken, "the credentials file still has them")
        let answer = try await HTTP.request(
            "\(second.baseURL)/api/v1/groups", headers: [("Authorization", "Bearer \(second.adminToken)")])
        #expect(answer.status == 200)
    }

    @Test("migrate, projects, keys create/list/revoke; bad input is a clear error, not a crash")
    func keysLifecycle() throws {
        let scratch = TemporaryDirectory(prefix: "collector-cli")
        defer { scratch.remove() }
        let directory = scratch.path
        let data = ["--data-dir", directory]
        #expect(try collector(["migrate"] + data).status == 0)
        let created = try collector(["projects", "create", "billing"] + data)
        #expect(created.status == 0 && created.output.contains("billing created"), "\(created.output)")
        let projects = try collector(["projects", "list"] + data)
        let projectID = try #require(
            projects.output.split(separator: "\n").first { $0.hasSuffix("billing") }?.split(separator: "\t").first)
        let key = try collector(["keys", "create", "--project", String(projectID), "--kind", "admin"] + data)
        #expect(key.status == 0 && key.output.contains("bbx_admin_"), "\(key.output)")
        let keyID = try #require(key.output.split(separator: " ").dropFirst().first)
        #expect(try collector(["keys", "list"] + data).output.contains("\(keyID)\tproject \(projectID)\tadmin"))
        #expect(try collector(["keys", "revoke", String(keyID)] + data).status == 0)
        #expect(try collector(["keys", "list"] + data).output.contains("revoked"))
        let ingest = try collector(
            ["keys", "create", "--project", String(projectID), "--public-url", "https://crashes.example.com"] + data)
        let ingestSecret = try #require(ingest.output.split(separator: "\n").first?.split(separator: " ").last)
        #expect(
            ingest.output.contains("Sentry DSN: https://\(ingestSecret)@crashes.example.com/\(projectID)"),
            "\(ingest.output)")
        let symbols = try collector(["keys", "create", "--project", String(projectID), "--kind", "symbols"] + data)
        #expect(symbols.status == 0 && symbols.output.contains("(symbols)") && symbols.output.contains("bbx_symbols_"))

        let again = try collector(["keys", "revoke", String(keyID)] + data)
        #expect(again.status != 0 && again.output.contains("no active key"), "\(again.output)")
        let noProject = try collector(["keys", "create", "--project", "999"] + data)
        #expect(noProject.status != 0 && noProject.output.contains("there is no project 999"))
        let badKind = try collector(["keys", "create", "--project", String(projectID), "--kind", "root"] + data)
        #expect(badKind.status != 0 && badKind.output.contains("--kind must be ingest, admin or symbols"))
        #expect(!again.output.contains("Fatal error") && !badKind.output.contains("Fatal error"))
    }

    @Test("an unreachable or malformed database URL is one clear error and exit status 1, not a hang")
    func badDatabase() throws {
        let scratch = TemporaryDirectory(prefix: "collector-db")
        defer { scratch.remove() }
        let directory = scratch.path
        let unreachable = try collector([
            "migrate", "--data-dir", directory, "--database-url", "postgres://blackbox@127.0.0.1:1/blackbox",
        ])
        #expect(unreachable.status == 1)
        #expect(
            unreachable.output.contains("cannot reach PostgreSQL at 127.0.0.1:1/blackbox"),
            "\(unreachable.output.suffix(300))")
        let malformed = try collector(["migrate", "--data-dir", directory, "--database-url", "mysql://somewhere"])
        #expect(malformed.status == 1 && malformed.output.contains("must look like postgres://"))
    }

    @Test("limits are set by name on the command line and in the environment; a bad one is a clear error")
    func limitSettings() throws {
        var limits = IngestLimits()
        try limits.set("maxConcurrentUploads=3, maxReportBytes=2M,idleTimeout=5")
        try limits.set("minFreeBytes=1G")
        #expect(limits.maxConcurrentUploads == 3 && limits.maxReportBytes == 2 << 20)
        #expect(limits.idleTimeout == .seconds(5) && limits.minFreeBytes == 1 << 30)
        for bad in ["nonsense=1", "maxEntries", "maxEntries=-2", "maxEntries=lots", "maxBodyBytes=99999999999G"] {
            #expect(throws: IngestLimits.SettingError.self, "\(bad)") { try limits.set(bad) }
        }
        let scratch = TemporaryDirectory(prefix: "collector-limits")
        defer { scratch.remove() }
        let directory = scratch.path
        let refused = try collector(["serve", "--data-dir", directory, "--port", "0", "--limit", "nonsense=1"])
        #expect(refused.status != 0 && refused.output.contains("unknown limit \"nonsense\""), "\(refused.output)")
    }
}
