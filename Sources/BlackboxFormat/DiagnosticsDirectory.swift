#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif
#if canImport(Glibc)
    import Glibc
#endif

/// The directory an app keeps its diagnostics in, and the one place its layout is defined
/// (docs/layout.md describes it for people). The library writes it, the uploader and the `blackbox`
/// CLI read it, tests build it: all through this type, never by joining path strings.
/// ```
/// journal              the crash-proof ring of log records
/// logs/                the active log file and its archives
/// crashes/pending/     raw reports the signal handler wrote, for the next launch
/// crashes/quarantine/  raw reports whose processing crashed the app once
/// crashes/delivery/    bundles `blackbox deliver-crash` builds while a crashed process waits
/// runs/                one record per running process (<pid>.json), removed at a clean exit
/// runs/ended/          one file per ended run (how it ended), until a bundle carries the counts
/// outbox/              finished reports: <kind>-<uuid>.json/.txt (crash, nonfatal, termination)
/// outbox/bundles/      the spool: bundles waiting for upload
/// outbox/sentry/       the Sentry delivery's spool: envelopes waiting for upload
/// outbox/rejected/     bundles (and envelopes) the server refused for good
/// outbox/sent-archives log archives already bundled
/// ```
public struct DiagnosticsDirectory: Sendable, Hashable {
    public let root: String

    public init(_ root: String) {
        self.root = root
    }

    /// The directory whose `crashes/pending/` holds `rawReport` (what a crash-time helper is given);
    /// nil when the path is not in such a folder.
    public init?(containingPendingReport rawReport: String) {
        let parts = rawReport.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count >= 3, parts.suffix(3).dropLast().elementsEqual(["crashes", "pending"]) else { return nil }
        let root = parts.dropLast(3).joined(separator: "/")
        switch root {
        case "" where rawReport.hasPrefix("/"): self.init("/")
        case "": self.init(".")
        default: self.init(root)
        }
    }

    public var journal: String { root + "/journal" }
    /// The journal of instance `n` of an app run several times at once on this directory (0 is
    /// `journal`, then `journal.1`, `journal.2`…): each running process holds one.
    public func journal(instance: Int) -> String { instance == 0 ? journal : "\(journal).\(instance)" }
    /// Every instance's journal that exists, instance 0 first.
    public var journals: [String] {
        (0..<BlackboxInstances.limit).map { journal(instance: $0) }.filter { access($0, F_OK) == 0 }
    }
    public var logs: String { root + "/logs" }
    public var pendingCrashes: String { root + "/crashes/pending" }
    public var quarantine: String { root + "/crashes/quarantine" }
    public var crashDelivery: String { root + "/crashes/delivery" }
    public var runs: String { root + "/runs" }
    public var endedSessions: String { runs + "/ended" }
    public var outbox: String { root + "/outbox" }
    public var spool: String { outbox + "/bundles" }
    public var sentrySpool: String { outbox + "/sentry" }
    public var rejected: String { outbox + "/rejected" }
    public var sentArchives: String { outbox + "/sent-archives" }
    /// How far the active log file has been shipped while the app runs (`CollectorUpload.liveLogInterval`).
    public var liveLog: String { outbox + "/live-log" }

    /// Whether `path` holds any part of the layout (how the CLI tells a diagnostics directory from
    /// a directory of loose files).
    public static func isDiagnosticsDirectory(_ path: String) -> Bool {
        let directory = DiagnosticsDirectory(path)
        let parts = [directory.journal, directory.logs, directory.outbox, path + "/crashes"]
        return parts.contains { (part: String) in FileManager.default.fileExists(atPath: part) }
    }

    /// The one definition of a finished report in the outbox: `<kind>-<uuid>.json` for each
    /// `CrashReport.Kind` (each with its `.txt` rendering beside it, written first).
    public static func isReportFileName(_ name: String) -> Bool {
        name.hasSuffix(".json") && CrashReport.Kind.allCases.contains { name.hasPrefix($0.rawValue + "-") }
    }

    /// Where a report is written, without the extension: `.txt` and `.json` are added.
    public func reportBasePath(_ report: CrashReport) -> String {
        "\(outbox)/\(report.kind.rawValue)-\(report.id.uuidString.lowercased())"
    }

    /// The outbox's reports, as paths sorted by name: regular files only (a symbolic link planted
    /// in the outbox must not carry another file into a bundle).
    public func reportFiles() -> [String] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: outbox)) ?? []
        return names.filter(Self.isReportFileName).sorted().map { "\(outbox)/\($0)" }.filter { path in
            var info = stat()
            return lstat(path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFREG
        }
    }

    /// The ended runs waiting to be counted in a bundle, as paths sorted by name (regular files only).
    public func endedSessionFiles() -> [String] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: endedSessions)) ?? []
        return names.filter { $0.hasSuffix(".json") }.sorted().map { "\(endedSessions)/\($0)" }.filter { path in
            var info = stat()
            return lstat(path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFREG
        }
    }
}

/// Instances of one app that may run at once on one diagnostics directory.
public enum BlackboxInstances {
    public static let limit = 16

    /// Instance `n`'s log file base name: the app's for 0, `<base>.<n>` after it.
    public static func logBaseName(_ base: String, instance: Int) -> String {
        instance == 0 ? base : "\(base).\(instance)"
    }
}
