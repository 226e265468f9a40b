import BlackboxFormat
import Synchronization

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

#if canImport(Glibc)
    import Glibc
#endif

/// The next-launch half of crash capture: raw reports in `crashes/pending/` become JSON and text
/// reports in `outbox/`.
///
/// Crash-safety of the processing itself:
/// - A raw file is renamed to `<name>.processing` before it is read. Finding such a file at the next
///   start means processing it crashed the app: it moves to `crashes/quarantine/` instead of being
///   tried again, so a poisonous report cannot make the app crash-loop at start-up.
/// - The raw file is deleted only after both outputs and the outbox directory are fsynced.
public struct CrashReportProcessor: Sendable {
    public let directory: String
    public var symbolizerPath: String?
    public var debugFileDirectories: [String] = []
    public var logTailLines = 50

    public init(directory: String) {
        self.directory = directory
    }

    var layout: DiagnosticsDirectory { DiagnosticsDirectory(directory) }

    public struct Outcome: Sendable {
        /// Reports now in the outbox, with the path of their JSON file.
        public var processed: [(report: CrashReport, path: String)] = []
        /// Raw files moved to quarantine (their processing crashed earlier, or they are not reports).
        public var quarantined: [String] = []
        /// Files that could not be handled now (I/O errors); they stay pending.
        public var failures: [String] = []
    }

    /// Processes every pending raw report, or until `shouldContinue` says stop (checked before each;
    /// the rest stay pending). Safe to call at any time; does nothing when there are none.
    public func processPending(while shouldContinue: () -> Bool = { true }) -> Outcome {
        var outcome = Outcome()
        let names = directoryEntries(layout.pendingCrashes).sorted()
        guard !names.isEmpty else { return outcome }
        do {
            try makeDirectory(layout.outbox)
            try makeDirectory(layout.quarantine)
        } catch {
            outcome.failures.append(error.description)
            return outcome
        }
        for name in names where name.hasSuffix(".raw.processing") {
            quarantine(
                name, as: String(name.dropLast(".processing".count)),
                because: "processing it crashed at an earlier start",
                into: &outcome)
        }
        let builder = self.builder
        for name in names where name.hasSuffix(".raw") {
            guard shouldContinue() else { break }
            let raw = "\(layout.pendingCrashes)/\(name)"
            let processing = raw + ".processing"
            guard rename(raw, processing) == 0 else {
                outcome.failures.append("\(raw): \(errnoDescription())")
                continue
            }
            DurableFile.syncDirectory(containing: processing)
            InProgress.begin(processing: processing, raw: raw)
            defer { InProgress.end(processing: processing) }
            guard let bytes = DurableFile.read(processing) else {
                outcome.failures.append("\(processing): \(errnoDescription())")
                rename(processing, raw)
                continue
            }
            let parsed: RawCrashReport
            do {
                parsed = try RawCrashReport(bytes: bytes)
            } catch {
                quarantine(name + ".processing", as: name, because: "\(error)", into: &outcome)
                continue
            }
            var report = builder.build(from: parsed)
            report.notes.append("processed from \(name)")
            // Committed under the in-progress lock: an exit meanwhile waits for it, or has already
            // put the raw report back (then this run leaves it for the next start).
            InProgress.commit(processing: processing) { () -> Void in
                do {
                    let path = try Outbox(layout).write(report)
                    unlink(processing)
                    DurableFile.syncDirectory(containing: processing)
                    outcome.processed.append((report, path))
                } catch {
                    outcome.failures.append("\(error)")
                    rename(processing, raw)
                }
            }
        }
        return outcome
    }

    /// Turns one raw report file into a report without touching any directory (the CLI's `show`).
    package static func report(
        fromRawFile path: String, symbolizerPath: String? = nil, debugFileDirectories: [String] = []
    ) throws -> CrashReport {
        guard let bytes = DurableFile.read(path) else {
            throw DurableFile.Failure(SystemError("read", path: path))
        }
        let raw = try RawCrashReport(bytes: bytes)
        var builder = CrashReportBuilder(symbolicator: Symbolicator.locate(configured: symbolizerPath))
        builder.symbolicator?.debugFileDirectories = debugFileDirectories
        return builder.build(from: raw)
    }

    /// How this processor turns raw reports into reports (also used for hang reports).
    var builder: CrashReportBuilder {
        var builder = CrashReportBuilder(
            symbolicator: Symbolicator.locate(configured: symbolizerPath), logTailLines: logTailLines)
        builder.symbolicator?.debugFileDirectories = debugFileDirectories
        return builder
    }

    private func quarantine(_ name: String, as target: String, because reason: String, into outcome: inout Outcome) {
        let destination = "\(layout.quarantine)/\(target)"
        if rename("\(layout.pendingCrashes)/\(name)", destination) == 0 {
            DurableFile.syncDirectory(containing: destination)
            outcome.quarantined.append(destination)
            InternalDiagnostics.say("quarantined crash report \(destination): \(reason)")
        } else {
            outcome.failures.append("\(layout.pendingCrashes)/\(name): \(errnoDescription())")
        }
    }
}

/// The raw reports being processed now (by any processor of this process). A clean exit meanwhile
/// (a short-lived program whose start began processing) puts them back as `.raw`: left as
/// `.raw.processing`, the next start would take them for reports whose processing crashed the app
/// and quarantine them. A crash leaves them, as it should.
private enum InProgress {
    /// `.processing` path → the `.raw` path it came from.
    private static let current = Mutex<[String: String]>([:])
    private static let exitHookRegistered = Atomic<Bool>(false)

    static func begin(processing: String, raw: String) {
        current.withLock { $0[processing] = raw }
        if exitHookRegistered.compareExchange(expected: false, desired: true, ordering: .relaxed).exchanged {
            atexit { InProgress.putBack() }
        }
    }

    static func end(processing: String) { current.withLock { $0[processing] = nil } }

    /// Runs `body` if the report is still being processed (not put back by an exit).
    static func commit(processing: String, _ body: () -> Void) {
        current.withLock { current in
            guard current[processing] != nil else { return }
            body()
        }
    }

    private static func putBack() {
        current.withLock { current in
            for (processing, raw) in current where rename(processing, raw) == 0 {
                DurableFile.syncDirectory(containing: raw)
            }
            current = [:]
        }
    }
}
