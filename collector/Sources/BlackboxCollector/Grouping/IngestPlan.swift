import BlackboxFormat
import Foundation

/// What storing one validated bundle means, decided once in plain Swift: every store applies a plan
/// and only translates it to SQL, so the stores cannot disagree about defaults, grouping or counting.
///
/// A store applies the plans of a batch in one transaction, each in this order:
/// 1. If the project already holds a bundle with the plan's upload id, or else with its sha256, the
///    outcome is `.duplicate(existing)` and nothing is written.
/// 2. The bundle row, then one row per file.
/// 3. For each occurrence, in order: if the project already holds a report with its id (the same
///    report in an earlier bundle), it is skipped: no group is created or counted for it. Otherwise
///    its group is created when new (count 0), the report is inserted, and the group's count,
///    first and last seen, latest report, and version and host tallies are updated; the images its
///    frames use are recorded, and it is marked for symbolication when one lacks debug-info names.
///
/// Built off the database's transaction (on the ingest path, where inspection ran), so that encoding
/// a large report never holds the write lock.
public struct IngestPlan: Sendable {
    struct BundleRow: Sendable {
        var projectID: Int64
        var uploadID: String?
        var sha256: String
        var size: Int64
        var blob: String
        /// From the manifest, or else the first report.
        var appName: String?
        var appVersion: String?
        var host: String?
        var hasManifest: Bool
        var receivedAt: Date
        var fileCount: Int
        var reportCount: Int
    }

    struct OccurrenceRow: Sendable {
        var reportUUID: String
        var signature: CrashSignature.Result
        var kind: String
        var occurredAt: Date
        /// As the report gives them (shown on the occurrence).
        var appVersion: String?
        var host: String
        var reason: String?
        /// The trace of the request that failed (the scope's `trace-id`), when it is one
        /// (`TraceID.checked`).
        var traceID: String?
        /// What the crash most likely was (`CrashDiagnosis.Kind`'s raw value); nil for reports without a
        /// signal.
        var diagnosis: String?
        /// What the group tallies: "unknown" when the report gives none.
        var versionKey: String
        var hostKey: String
        /// The report as stored and served by the read API.
        var json: Data
        /// The images its frames point into, and whether they have debug-info names yet: a report
        /// with an unresolved one waits for the symbolication service (`pending`).
        var images: [ReportSymbols.ImageUse]
        var needsSymbolication: Bool { images.contains { !$0.resolved } }
    }

    /// Release health: how the app's runs ended, per version (manifest format 3), and the requests they
    /// served, added to the day the bundle arrived.
    struct SessionRow: Sendable, Equatable {
        var versionKey: String
        var clean: Int
        var crashed: Int
        var hung: Int
        var killed: Int
        var requests = RequestCounts()
    }

    var bundle: BundleRow
    var files: [InspectedFile]
    var sessions: [SessionRow] = []
    var losses: [LossRow] = []
    /// Session summaries dropped as physically impossible (counted in `/metrics`).
    var implausibleSessionSummaries = 0
    /// One per distinct report id of the bundle, in the bundle's order.
    var occurrences: [OccurrenceRow]

    /// What storing the plan writes: the bundle's bytes and its reports' JSON.
    var storedBytes: Int {
        occurrences.reduce(Int(bundle.size)) { $0 + $1.json.count }
    }

    /// The plan for an upload of any format, held to `bounds` here so that every format is: its logs
    /// to the indexing budget, its reports to the report bounds (cut to the counts, refused past the
    /// sizes).
    init(_ new: NewBundle, bounds: IngestBounds) throws {
        let firstReport = new.reports.first
        bundle = BundleRow(
            projectID: new.projectID,
            uploadID: new.uploadID,
            sha256: new.sha256,
            size: new.size,
            blob: new.blob,
            appName: new.manifest?.app.name ?? firstReport?.app.name,
            appVersion: new.manifest?.app.version ?? firstReport?.app.version,
            host: new.manifest?.host ?? firstReport?.host.name,
            hasManifest: new.manifest != nil,
            receivedAt: new.receivedAt,
            fileCount: new.files.count,
            reportCount: new.reports.count)
        files = new.files
        bounds.indexing.apply(to: &files)
        var seen = Set<String>()
        var occurrences: [OccurrenceRow] = []
        var storedReportBytes = 0
        for (index, var report) in new.reports.enumerated() {
            let uuid = report.id.uuidString.lowercased()
            guard seen.insert(uuid).inserted else { continue }
            let wasCut = ReportBounds.cut(&report)
            // The format's encoding holds only for the report as the format made it.
            let formatJSON = !wasCut && index < new.encodedReports.count ? new.encodedReports[index] : nil
            let json = formatJSON ?? report.encoded()
            try bounds.reports.check(json: json.count, storedBefore: storedReportBytes, path: "report \(uuid)")
            storedReportBytes += json.count
            occurrences.append(
                OccurrenceRow(
                    reportUUID: uuid,
                    signature: CrashSignature.compute(report),
                    kind: report.kind.rawValue,
                    occurredAt: report.process.crashTime,
                    appVersion: report.app.version,
                    host: report.host.name,
                    reason: report.reason ?? report.fatalMessage,
                    traceID: report.scope?["trace-id"].flatMap(TraceID.checked),
                    diagnosis: report.diagnosis?.kind.rawValue,
                    versionKey: report.versionKey,
                    hostKey: report.hostKey,
                    json: json, images: ReportSymbols.imageUses(report)))
        }
        self.occurrences = occurrences
        (sessions, implausibleSessionSummaries) = Self.plausibleSessionRows(
            (new.manifest?.sessions ?? []) + new.sessions, receivedAt: new.receivedAt)
        losses = LossRows.rows((new.manifest?.losses ?? []) + new.losses)
    }

    /// A bundle describes the runs of one installation since its last upload, so release health
    /// trusts only what one installation can have run: a summary whose counts are negative, whose time
    /// span is not within the last year (or ends in the future), or that claims more runs than
    /// `maxRunsPerSecond` over its span is dropped whole, as is everything past `maxSessionsPerBundle`
    /// (a crash loop restarting every second for almost 3 hours). Returns the rows and how many
    /// summaries were dropped.
    static func plausibleSessionRows(_ summaries: [SessionSummary], receivedAt now: Date)
        -> (rows: [SessionRow], dropped: Int)
    {
        var kept: [SessionSummary] = []
        var total = 0
        for summary in summaries.prefix(100) {
            let counts = [summary.clean, summary.crashed, summary.hung, summary.killed]
            let span = summary.lastEnd.timeIntervalSince(summary.firstStart)
            guard counts.allSatisfy({ (0...maxSessionsPerBundle).contains($0) }), span >= 0,
                summary.lastEnd <= now.addingTimeInterval(86_400),
                summary.firstStart >= now.addingTimeInterval(-366 * 86_400),
                summary.requests.map({ plausible($0, over: span) }) ?? true
            else { continue }
            let runs = counts.reduce(0, +)
            guard Double(runs) <= span * maxRunsPerSecond + 1, total + runs <= maxSessionsPerBundle else { continue }
            total += runs
            kept.append(summary)
        }
        return (sessionRows(kept), summaries.count - kept.count)
    }

    /// Runs one installation can report in one bundle, and how fast they can have followed each other.
    static let maxSessionsPerBundle = 10_000
    static let maxRunsPerSecond = 100.0
    /// Requests one installation can have answered over a summary's span (at least a minute: Sentry's
    /// aggregates are per minute and arrive with a span of seconds).
    static let maxRequestsPerSecond = 100_000.0

    /// Counts that one installation can have made: none negative, errors and crashes among the
    /// requests, and no more requests than `maxRequestsPerSecond` over the span.
    static func plausible(_ requests: RequestCounts, over span: TimeInterval) -> Bool {
        requests.total >= 0 && (0...requests.total).contains(requests.serverErrors)
            && (0...requests.total).contains(requests.crashed)
            && Double(requests.total) <= max(span, 60) * maxRequestsPerSecond
    }

    /// At most 100 versions per bundle, counts within 0…1,000,000 (a client cannot make one bundle
    /// count more runs than a fleet has), requests within 0…10^9; summaries of one version are added up.
    static func sessionRows(_ summaries: [SessionSummary]) -> [SessionRow] {
        var rows: [SessionRow] = []
        for summary in summaries.prefix(100) {
            func bounded(_ count: Int) -> Int { min(max(count, 0), 1_000_000) }
            func boundedRequests(_ count: Int) -> Int { min(max(count, 0), 1_000_000_000) }
            let version = summary.appVersion.map { String($0.prefix(TallyKey.maxSessionVersionLength)) }
            let requests = summary.requests ?? RequestCounts()
            let row = SessionRow(
                versionKey: TallyKey.version(version), clean: bounded(summary.clean),
                crashed: bounded(summary.crashed), hung: bounded(summary.hung), killed: bounded(summary.killed),
                requests: RequestCounts(
                    total: boundedRequests(requests.total), serverErrors: boundedRequests(requests.serverErrors),
                    crashed: boundedRequests(requests.crashed)))
            if let index = rows.firstIndex(where: { $0.versionKey == row.versionKey }) {
                rows[index].clean += row.clean
                rows[index].crashed += row.crashed
                rows[index].hung += row.hung
                rows[index].killed += row.killed
                rows[index].requests = rows[index].requests + row.requests
            } else if row.clean + row.crashed + row.hung + row.killed + row.requests.total > 0 {
                rows.append(row)
            }
        }
        return rows
    }
}
