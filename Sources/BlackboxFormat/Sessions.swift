#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// How one run of an app ended, as the library records it in `runs/ended/` (a clean exit at once; a
/// crash, a hang that never recovered or a kill at the next start, from what the run left behind).
public struct EndedSession: Codable, Sendable, Equatable {
    public enum Outcome: String, Codable, Sendable, CaseIterable {
        /// `exit`, a return from `main`, `Blackbox.shutdown`.
        case clean
        /// The signal handler wrote a crash report.
        case crashed
        /// A hang was reported and the run then ended without exiting cleanly.
        case hung
        /// It ended unseen: SIGKILL, the OOM killer, a power loss.
        case killed
    }

    public var appVersion: String?
    public var startTime: Date
    public var endTime: Date
    public var outcome: Outcome
    /// The requests the run served, where a framework integration counted them.
    public var requests: RequestCounts?

    public init(appVersion: String?, startTime: Date, endTime: Date, outcome: Outcome, requests: RequestCounts? = nil) {
        self.appVersion = appVersion
        self.startTime = ReportTime.milliseconds(startTime)
        self.endTime = ReportTime.milliseconds(endTime)
        self.outcome = outcome
        self.requests = requests
    }

    /// The ended runs waiting in `directory` to be counted, and their files (an unreadable file counts
    /// for nothing but is listed, so it goes with the others).
    public static func pending(in directory: DiagnosticsDirectory) -> (paths: [String], sessions: [EndedSession]) {
        let paths = directory.endedSessionFiles()
        let decoder = JSONDecoder()
        let sessions = paths.compactMap { path -> EndedSession? in
            // The files are a few hundred bytes; anything larger is not one of them.
            guard let size = (try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? Int,
                size <= 16 << 10,
                let data = FileManager.default.contents(atPath: path)
            else { return nil }
            return try? decoder.decode(EndedSession.self, from: data)
        }
        return (paths, sessions)
    }

    /// `<start ms>-<pid>.json`: unique per run, sorted by start.
    public static func fileName(startTime: Date, pid: Int32) -> String {
        "\(Int64((startTime.timeIntervalSince1970 * 1000).rounded()))-\(pid).json"
    }
}

/// Requests a server answered, counted by how they ended: what the framework integrations count
/// (`Blackbox.handleRequest`), and what Sentry's server SDKs send as session aggregates.
public struct RequestCounts: Codable, Sendable, Equatable {
    /// Every request that ended: answered, failed or cut short by a crash.
    public var total: Int
    /// Answered with a 5xx status, or failed with an error of one: what the app reports as a server error.
    public var serverErrors: Int
    /// In flight when the process crashed.
    public var crashed: Int

    public init(total: Int = 0, serverErrors: Int = 0, crashed: Int = 0) {
        self.total = total
        self.serverErrors = serverErrors
        self.crashed = crashed
    }

    public static func + (left: Self, right: Self) -> Self {
        Self(
            total: left.total + right.total, serverErrors: left.serverErrors + right.serverErrors,
            crashed: left.crashed + right.crashed)
    }
}

/// Ended runs of one app version, counted by how they ended: what a bundle manifest carries (format
/// 3) for the collector's release health; with the requests those runs served, where a framework
/// integration counted them (absent otherwise, and in manifests written before).
public struct SessionSummary: Codable, Sendable, Equatable {
    /// Nil when the app gives no version.
    public var appVersion: String?
    public var clean: Int
    public var crashed: Int
    public var hung: Int
    public var killed: Int
    public var firstStart: Date
    public var lastEnd: Date
    public var requests: RequestCounts?

    public var total: Int { clean + crashed + hung + killed }

    public init(
        appVersion: String?, clean: Int = 0, crashed: Int = 0, hung: Int = 0, killed: Int = 0, firstStart: Date,
        lastEnd: Date, requests: RequestCounts? = nil
    ) {
        self.appVersion = appVersion
        self.clean = clean
        self.crashed = crashed
        self.hung = hung
        self.killed = killed
        self.firstStart = firstStart
        self.lastEnd = lastEnd
        self.requests = requests
    }

    /// One summary per version, in order of first start.
    public static func summarize(_ sessions: [EndedSession]) -> [SessionSummary] {
        var summaries: [SessionSummary] = []
        for session in sessions.sorted(by: { $0.startTime < $1.startTime }) {
            var summary =
                summaries.first { $0.appVersion == session.appVersion }
                ?? SessionSummary(
                    appVersion: session.appVersion, firstStart: session.startTime, lastEnd: session.endTime)
            switch session.outcome {
            case .clean: summary.clean += 1
            case .crashed: summary.crashed += 1
            case .hung: summary.hung += 1
            case .killed: summary.killed += 1
            }
            if let requests = session.requests { summary.requests = (summary.requests ?? RequestCounts()) + requests }
            summary.firstStart = min(summary.firstStart, session.startTime)
            summary.lastEnd = max(summary.lastEnd, session.endTime)
            if let index = summaries.firstIndex(where: { $0.appVersion == session.appVersion }) {
                summaries[index] = summary
            } else {
                summaries.append(summary)
            }
        }
        return summaries
    }
}
