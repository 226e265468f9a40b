import BlackboxFormat

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif
#if canImport(Glibc)
    import Glibc
#endif

/// Finished reports waiting for delivery (`DiagnosticsDirectory.outbox`). Crash processing and
/// non-fatal assertions write here; bundling reads and removes.
package struct Outbox: Sendable {
    package let directory: DiagnosticsDirectory

    package init(_ directory: DiagnosticsDirectory) {
        self.directory = directory
    }

    /// Writes `<kind>-<id>.txt` then `.json`, both durably: the JSON's presence means the report is
    /// whole. Returns the JSON's path.
    package func write(_ report: CrashReport) throws(DurableFile.Failure) -> String {
        try makeOutbox()
        let base = directory.reportBasePath(report)
        let json = try encoded(report, path: base + ".json")
        try DurableFile.write(Array(report.textRendering.utf8), to: base + ".txt")
        try DurableFile.write(Array(json), to: base + ".json")
        return base + ".json"
    }

    /// Writes the report's JSON alone, durably, as `<kind>-<id>.json<suffix>`: a name delivery does
    /// not take (a report still waiting for its frames' names, `ReportNaming`). Returns its path.
    package func writeJSON(_ report: CrashReport, suffix: String) throws(DurableFile.Failure) -> String {
        try makeOutbox()
        let path = directory.reportBasePath(report) + ".json" + suffix
        try DurableFile.write(Array(try encoded(report, path: path)), to: path)
        return path
    }

    private func makeOutbox() throws(DurableFile.Failure) {
        do {
            try makeDirectory(directory.outbox)
        } catch {
            throw DurableFile.Failure(path: directory.outbox, reason: error.description)
        }
    }

    private func encoded(_ report: CrashReport, path: String) throws(DurableFile.Failure) -> Data {
        do {
            return try CrashReport.makeEncoder().encode(report)
        } catch {
            throw DurableFile.Failure(path: path, reason: "cannot encode: \(error)")
        }
    }

    /// The reports' JSON files, sorted by name.
    package func reports() -> [String] { directory.reportFiles() }

    /// Removes a report (its JSON, then its text rendering) once it is safely in a bundle.
    package func remove(reportAt jsonPath: String) {
        unlink(jsonPath)
        if jsonPath.hasSuffix(".json") { unlink(String(jsonPath.dropLast(5)) + ".txt") }
    }
}
