import BlackboxFormat
import Foundation

/// What the collector keeps, behind one interface so that the embedded SQLite store and a future
/// PostgreSQL store are interchangeable. Implementations must make `index(_:)` atomic: a bundle, its
/// files, its reports and the group updates are stored together or not at all.
public protocol CollectorStore: Sendable {
    func migrate() async throws
    /// Storage is reachable (for `/ready`).
    func ping() async throws

    // Projects and keys
    func createProject(name: String) async throws -> Project
    func projects() async throws -> [Project]
    /// Stores the hash of `secret`, never the secret itself.
    func createKey(projectID: Int64, kind: APIKey.Kind, secret: String) async throws -> APIKey
    func keys() async throws -> [APIKey]
    func revokeKey(id: Int64) async throws -> Bool
    func authenticate(secret: String) async throws -> APIKey?
    /// Web sessions and one-time sign-in links, by the sha256 of their random token. `session`
    /// answers the admin key a live session belongs to (nil once expired, ended, or its key revoked);
    /// `redeemLink` answers a link's key once, deleting the link. Creating either drops expired ones.
    func createSession(tokenHash: String, keyID: Int64, kind: SessionKind, expiresAt: Date) async throws
    func session(tokenHash: String, now: Date) async throws -> APIKey?
    func redeemLink(tokenHash: String, now: Date) async throws -> APIKey?
    func deleteSession(tokenHash: String) async throws

    // Ingest
    func existingBundle(projectID: Int64, uploadID: String?, sha256: String) async throws -> BundleRecord?
    /// Indexes many bundles in one transaction (group commit). A bundle whose upload id or hash is
    /// already stored is not stored again; its outcome is the existing record.
    func index(_ bundles: [NewBundle]) async throws -> [IndexOutcome]

    // Read side
    func groups(projectID: Int64, page: Page) async throws -> [CrashGroup]
    func group(id: Int64) async throws -> CrashGroup?
    func occurrences(groupID: Int64, page: Page) async throws -> [Occurrence]
    func report(id: Int64) async throws -> StoredReport?
    func bundles(projectID: Int64, page: Page) async throws -> [BundleRecord]
    func bundle(id: Int64) async throws -> BundleRecord?
    func files(bundleID: Int64) async throws -> [BundleFile]
    func file(id: Int64) async throws -> BundleFile?
    func searchLogs(projectID: Int64, query: String, page: Page) async throws -> [LogHit]

    // Background work
    /// Log files not yet in the search index, oldest first.
    func unindexedLogFiles(limit: Int) async throws -> [BundleFile]
    /// Stores the lines of several files in one transaction (one commit for all of them). Per file
    /// idempotent: storing a file again replaces its lines. A file deleted meanwhile is skipped.
    func storeLogLines(_ files: [LogFileLines]) async throws
    /// Deletes bundles received before `cutoff` with their files, occurrences and log lines, and
    /// returns how many, with the blobs no bundle references any more (the caller deletes them after
    /// checking `referencedBlobs` again). Gives the space back.
    func deleteBundles(receivedBefore cutoff: Date) async throws -> RetentionOutcome
    /// Which of `blobs` some bundle (of any project) references.
    func referencedBlobs(_ blobs: [String]) async throws -> Set<String>
}

public struct RetentionOutcome: Sendable, Equatable {
    public var deletedBundles: Int
    public var unreferencedBlobs: [String]
}

extension CollectorStore {
    public func storeLogLines(fileID: Int64, lines: [String]) async throws {
        try await storeLogLines([LogFileLines(fileID: fileID, lines: lines)])
    }
}

/// One log file's lines, as the indexer read them from its bundle.
public struct LogFileLines: Sendable {
    public var fileID: Int64
    public var lines: [String]
    public init(fileID: Int64, lines: [String]) {
        self.fileID = fileID
        self.lines = lines
    }
}

public struct Page: Sendable, Equatable {
    public var limit: Int
    public var offset: Int
    public init(limit: Int = 50, offset: Int = 0) {
        self.limit = max(1, min(limit, 500))
        self.offset = max(0, offset)
    }
}

public struct Project: Codable, Sendable, Equatable {
    public var id: Int64
    public var name: String
    public var createdAt: Date
}

public struct APIKey: Codable, Sendable, Equatable {
    public enum Kind: String, Codable, Sendable {
        /// May upload bundles, nothing else.
        case ingest
        /// May read everything (API and web UI) and upload.
        case admin
    }
    public var id: Int64
    public var projectID: Int64
    public var kind: Kind
    /// The first characters of the secret, to tell keys apart in listings.
    public var prefix: String
    public var createdAt: Date
    public var revokedAt: Date?
}

public struct BundleRecord: Codable, Sendable, Equatable {
    public var id: Int64
    public var projectID: Int64
    public var uploadID: String?
    public var sha256: String
    public var size: Int64
    public var blob: String
    public var appName: String?
    public var appVersion: String?
    public var host: String?
    public var hasManifest: Bool
    public var receivedAt: Date
    public var fileCount: Int
    public var reportCount: Int
}

public struct BundleFile: Codable, Sendable, Equatable {
    public enum Kind: String, Codable, Sendable { case report, log, manifest, other }
    public var id: Int64
    public var bundleID: Int64
    /// The entry's name inside the zip (display only: never used as a file system path).
    public var path: String
    public var kind: Kind
    public var size: Int64
    public var sha256: String
}

public struct CrashGroup: Codable, Sendable, Equatable {
    /// Distinct versions (and hosts) counted by name per group; occurrences from further ones are
    /// counted under `otherValues`, so that a client inventing versions cannot grow a group's page
    /// without bound (10 uploads once gave one group 19,000).
    public static let maxTrackedValues = 100
    public static let otherValues = "(other)"

    public var id: Int64
    public var projectID: Int64
    public var signature: String
    public var signatureVersion: Int
    public var kind: String
    public var title: String
    public var count: Int
    public var firstSeen: Date
    public var lastSeen: Date
    public var latestReportID: Int64?
    public var versions: [String: Int]
    public var hosts: [String: Int]
}

public struct Occurrence: Codable, Sendable, Equatable {
    public var reportID: Int64
    public var reportUUID: String
    public var bundleID: Int64
    public var occurredAt: Date
    public var appVersion: String?
    public var host: String?
    public var reason: String?
}

public struct StoredReport: Sendable {
    public var id: Int64
    public var bundleID: Int64
    public var groupID: Int64
    public var report: CrashReport
}

public struct LogHit: Codable, Sendable, Equatable {
    public var fileID: Int64
    public var bundleID: Int64
    public var path: String
    public var lineNumber: Int
    public var text: String
}

/// A validated bundle, durable on disk, ready to be indexed.
public struct NewBundle: Sendable {
    public var projectID: Int64
    public var uploadID: String?
    public var sha256: String
    public var size: Int64
    public var blob: String
    public var manifest: BundleManifest?
    public var files: [InspectedFile]
    public var reports: [CrashReport]
    public var receivedAt: Date
}

public struct InspectedFile: Sendable, Equatable {
    public var path: String
    public var kind: BundleFile.Kind
    public var size: Int64
    public var sha256: String
    /// Lines counted at inspection (for plain logs; a `.gz` log counts as the per-file cap).
    public var lineCount = 0
    /// A log past its bundle's indexing budget: stored and downloadable, not searchable.
    public var skipsIndexing = false

    /// Whether the indexer should read it.
    public var isIndexed: Bool { kind != .log || skipsIndexing }
}

public enum IndexOutcome: Sendable {
    case stored(BundleRecord)
    case duplicate(BundleRecord)

    public var record: BundleRecord {
        switch self {
        case .stored(let record), .duplicate(let record): record
        }
    }
}

public enum SessionKind: String, Sendable {
    /// A browser's session cookie.
    case session
    /// A one-time sign-in link, exchanged for a session on first use.
    case link
}
