import Foundation

/// Where the symbolication service finds reports to symbolicate and records what it did. A report
/// whose frames lack debug-info names is `pending` from ingest on; the service symbolicates it from
/// the symbol store, or marks it `missing` (no debug file for one of its build-ids yet); symbols
/// arriving later for such a build-id make it `pending` again. Every change of a report's state
/// bumps its epoch, so a result computed before the change is not applied after it.
public protocol SymbolicationStore: Sendable {
    /// Reports waiting, oldest first.
    func pendingSymbolication(limit: Int) async throws -> [PendingReport]
    /// Marks reports (at their epoch) as waiting for symbols that are not in the store.
    func markSymbolsMissing(_ reports: [PendingReport]) async throws
    /// Stores symbolicated reports and moves each to the group of its new signature, exactly once, in
    /// one transaction: for each, false (and nothing written for it) when the report changed since it
    /// was read (another instance applied it, or it was queued again).
    func applySymbolication(_ updates: [SymbolicationUpdate]) async throws -> [Bool]
    /// Late symbols: the project's reports with unresolved frames in `buildID`'s image become pending;
    /// returns how many.
    @discardableResult
    func requestSymbolication(projectID: Int64, buildID: String) async throws -> Int
    /// Build-ids that reports need debug info for and the store lacks, most reports first.
    func missingSymbols(in scope: ProjectScope, page: Page) async throws -> [MissingSymbols]
    /// How many of the project's reports have frames in each build-id's image.
    func reportCounts(buildIDs: [String], in scope: ProjectScope) async throws -> [String: Int]
    /// Where a group's occurrences went when symbolication regrouped them.
    func moves(fromGroup groupID: Int64, in scope: ProjectScope) async throws -> [GroupMove]
    /// Reports waiting now (for `/metrics`).
    func pendingSymbolicationCount() async throws -> Int
}

extension SymbolicationStore {
    func applySymbolication(_ update: SymbolicationUpdate) async throws -> Bool {
        try await applySymbolication([update]).first ?? false
    }
}

public struct PendingReport: Sendable, Equatable {
    public var id: Int64
    public var projectID: Int64
    public var epoch: Int64
    public var json: Data
}

/// A symbolicated report, ready to be stored and regrouped.
public struct SymbolicationUpdate: Sendable {
    public var report: PendingReport
    public var json: Data
    public var reason: String?
    public var signature: CrashSignature.Result
    public var kind: String
    public var occurredAt: Date
    public var versionKey: String
    public var hostKey: String
    /// Build-ids whose frames now all have debug-info names.
    public var resolvedBuildIDs: [String]
    /// True when every image is resolved; else the report waits (`missing`) for more symbols.
    public var complete: Bool
}

public struct MissingSymbols: Codable, Sendable, Equatable {
    public var buildID: String
    public var reports: Int
    public var lastSeen: Date
}

public struct GroupMove: Codable, Sendable, Equatable {
    public var toGroupID: Int64
    public var count: Int
    public var lastMovedAt: Date
}
