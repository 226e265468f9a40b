import Foundation

/// One archived symbol file of a project: a separate debug file, or a binary or shared library, keyed
/// by its ELF build-id and stored content-addressed (`blob`, named by its sha256). A build-id may have
/// several (a debug file and the unstripped binary).
public struct SymbolFile: Codable, Sendable, Equatable {
    public var id: Int64
    public var projectID: Int64
    public var buildID: String
    /// The debug id Sentry derives from the build-id (`sentry-cli debug-files check` prints it).
    public var debugID: String?
    /// The name it was uploaded under, for people; never used as a path.
    public var fileName: String
    public var size: Int64
    public var sha256: String
    /// The sha1 of the bytes: sentry-cli names files by it (nil for files stored before it was kept).
    public var sha1: String?
    public var blob: String
    /// DWARF: function names with file:line and inlined frames (debuginfod's `debuginfo`).
    public var hasDebugInfo: Bool
    /// Loadable code (debuginfod's `executable`).
    public var hasCode: Bool
    /// A source bundle: the sources its build's debug info names (`SourceBundle`; debuginfod's `source`).
    public var hasSources: Bool
    public var uploadedAt: Date
    /// Lookups in it that failed the symbolizer (timed out, crashed it, outgrew its memory); at
    /// `SymbolicationService.maxFailuresPerFile` it is left out of symbolication until deleted.
    public var symbolizerFailures: Int
}

/// A validated upload, before the store gives it an id.
public struct NewSymbolFile: Sendable, Equatable {
    public var projectID: Int64
    public var buildID: String
    public var fileName: String
    public var size: Int64
    public var sha256: String
    public var sha1: String?
    public var blob: String
    public var hasDebugInfo: Bool
    public var hasCode: Bool
    public var hasSources = false
    public var uploadedAt: Date
}
