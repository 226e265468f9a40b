import BlackboxFormat

/// A report as stored, with where it came from.
public struct StoredReport: Sendable {
    public var id: Int64
    public var bundleID: Int64
    public var groupID: Int64
    public var report: CrashReport
    /// Nil when the report needed no symbolication on the collector.
    public var symbolication: ReportSymbolication? = nil
}
