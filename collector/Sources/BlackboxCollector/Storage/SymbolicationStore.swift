import Foundation

/// Where the symbolication service finds reports to symbolicate and records what it did. A report
/// whose frames lack debug-info names is `pending` from ingest on; the service symbolicates it from
/// the symbol store, or marks it `missing` (no debug file for one of its build-ids yet); symbols
/// arriving later for such a build-id make it `pending` again. Every change of a report's state
/// bumps its epoch, so a result computed before the change is not applied after it.
public protocol SymbolicationStore: Sendable {
    /// The projects with reports due at `now` (pending, and past the time a failed attempt set for
    /// the next one), for the service to share its symbolizers out between.
    func projectsDueForSymbolication(at now: Date) async throws -> [Int64]
    /// A project's reports due at `now`, oldest first.
    func pendingSymbolication(projectID: Int64, at now: Date, limit: Int) async throws -> [PendingReport]
    /// Counts a failed attempt at a report (at its epoch): it is tried again at `retryAt`, or after
    /// `maxAttempts` attempts it is given up: `failed`, with `reason`, until new symbols queue it again.
    func symbolicationFailed(_ report: PendingReport, reason: String, retryAt: Date, maxAttempts: Int) async throws
    /// Counts a failed lookup in a symbol file (it timed out, crashed or outgrew the symbolizer);
    /// returns the file's failures so far.
    func recordSymbolizerFailure(fileID: Int64) async throws -> Int
    /// Marks reports (at their epoch) as waiting for symbols that are not in the store.
    func markSymbolsMissing(_ reports: [PendingReport]) async throws
    /// Stores symbolicated reports and moves each to the group of its new signature, exactly once, in
    /// one transaction: for each, false (and nothing written for it) when the report changed since it
    /// was read (another instance applied it, or it was queued again).
    func applySymbolication(_ updates: [SymbolicationUpdate]) async throws -> [Bool]
    /// Late symbols: the project's reports with unresolved frames in `buildID`'s image become pending,
    /// their failed attempts forgotten; returns how many.
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
    /// The diagnosis of the symbolicated report: a release build's Swift trap is named only once its
    /// `Swift runtime failure` frame is.
    public var diagnosis: String?
    public var signature: CrashSignature.Result
    public var kind: String
    public var occurredAt: Date
    public var versionKey: String
    public var hostKey: String
    /// Build-ids whose frames now all have debug-info names.
    public var resolvedBuildIDs: [String]
    /// True when every image is resolved; else the report waits (`missing`) for more symbols.
    public var complete: Bool
    /// Why an image with a debug file stays unresolved (the file was left out after failing the
    /// symbolizer): the report is then `failed`, not `missing`.
    public var failure: String? = nil
}

/// Where a stored report is in symbolication on the collector.
public struct ReportSymbolication: Codable, Sendable, Equatable {
    public enum State: String, Codable, Sendable {
        /// Waiting for the symbolication service.
        case pending
        /// Symbolicated as far as the symbol store allows; waiting for debug files it lacks.
        case missing
        case done
        /// Given up: attempts ran out, or a debug file it needs failed the symbolizer (`failure`).
        case failed
    }
    public var state: State
    /// Failed attempts since symbols last arrived for it.
    public var attempts: Int
    public var failure: String?

    /// From the stored columns: `failed` is kept as `missing` plus a reason (SQLite cannot alter the
    /// column's CHECK constraint).
    init?(column: String?, attempts: Int, failure: String?) {
        guard let column, let state = State(rawValue: column) else { return nil }
        self.state = failure != nil && state == .missing ? .failed : state
        self.attempts = attempts
        self.failure = failure
    }
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
