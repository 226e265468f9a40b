import BlackboxFormat
import Foundation
import Logging
import ServiceLifecycle
import Synchronization

/// Symbolicates stored reports from the symbol store in the background, after their upload was
/// acknowledged (never on the ingest path): frames without debug-info names get function, inlined
/// frames and file:line from the build-id's debug file, the report gets its `Swift runtime failure`
/// reason, and the report moves to the group of its new signature. The queue is the database
/// (`SymbolicationStore`), so it survives restarts and is shared by instances; applying a result is
/// exact and idempotent there.
///
/// Woken by ingest (new pending reports) and by symbol uploads (late symbols), and every
/// `pollInterval` for work other instances queued. Like the log indexer, it steps back while uploads
/// are arriving (`IngestActivity`), for at most `maxDeferral` per batch.
final class SymbolicationService: Service, Sendable {
    typealias Store = SymbolIndex & SymbolicationStore
    private let store: any Store
    private let symbolBlobs: BlobStore
    /// Nil when no llvm-symbolizer is installed: reports stay pending, and `/ready` and `/metrics` say so.
    let symbolizer: SymbolizerProcess?
    private let metrics: CollectorMetrics
    private let pollInterval: Duration
    private let activity: IngestActivity
    private let maxDeferral: Duration
    private let wakeups: AsyncStream<Void>
    private let wakeContinuation: AsyncStream<Void>.Continuation
    private let stopping = Atomic<Bool>(false)
    /// When the service started stepping back for uploads, across passes: under sustained ingest it
    /// waits `maxDeferral` once, not before every pass (each upload with a report starts one).
    private let deferringSince = Mutex<ContinuousClock.Instant?>(nil)
    private let logger = Logger(label: "collector.symbolication")
    static let batchSize = 50
    /// Lookups in one debug file that may fail (time out, crash the symbolizer, exceed its memory)
    /// before the file is left out for this process's life: its reports are then symbolicated
    /// without it instead of being retried, and holding up every project's reports, for ever.
    static let maxFailuresPerFile = 3
    private let failuresByBuildID = Mutex<[String: Int]>([:])

    init(
        store: any Store, symbolBlobs: BlobStore, symbolizer: SymbolizerProcess?, metrics: CollectorMetrics,
        activity: IngestActivity = IngestActivity(), maxDeferral: Duration = .seconds(2),
        pollInterval: Duration = .seconds(60)
    ) {
        self.activity = activity
        self.maxDeferral = maxDeferral
        self.store = store
        self.symbolBlobs = symbolBlobs
        self.symbolizer = symbolizer
        self.metrics = metrics
        self.pollInterval = pollInterval
        (wakeups, wakeContinuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        metrics.symbolizerAvailable(symbolizer != nil)
    }

    func wake() { wakeContinuation.yield() }

    func run() async throws {
        guard symbolizer != nil else {
            logger.warning("llvm-symbolizer not found: reports are not symbolicated on the collector (see /ready)")
            try? await gracefulShutdown()
            return
        }
        wake()  // whatever a previous run, or another instance, left
        await withGracefulShutdownHandler {
            await withTaskGroup(of: Void.self) { group in
                group.addTask { [self] in
                    while !isStopping {
                        try? await Task.sleep(for: pollInterval)
                        wake()
                    }
                }
                for await _ in wakeups { await symbolicatePending() }
                group.cancelAll()
            }
        } onGracefulShutdown: { [self] in
            stopping.store(true, ordering: .relaxed)
            wakeContinuation.finish()
            symbolizer?.stop()
        }
    }

    private var isStopping: Bool { Task.isCancelled || stopping.load(ordering: .relaxed) }

    /// Debug files whose lookups failed `maxFailuresPerFile` times (tests and /metrics read it).
    var abandonedBuildIDs: [String] {
        failuresByBuildID.withLock { $0.filter { $0.value >= Self.maxFailuresPerFile }.keys.sorted() }
    }

    /// Works through the queue until nothing new is left; returns how many reports were
    /// symbolicated (also used by tests and the benchmark to wait for it).
    @discardableResult
    func symbolicatePending() async -> Int {
        guard let symbolizer else { return 0 }
        var seen = Set<Int64>()
        var symbolicated = 0
        while !isStopping {
            let batch: [PendingReport]
            do {
                batch = try await store.pendingSymbolication(limit: Self.batchSize + seen.count)
                    .filter { !seen.contains($0.id) }
            } catch {
                logger.error("cannot read the symbolication queue: \(error)")
                return symbolicated
            }
            guard !batch.isEmpty else { break }
            await stepBackForUploads()
            var missing: [PendingReport] = []
            var updates: [SymbolicationUpdate] = []
            let started = ContinuousClock.now
            var work: [Waiting] = []
            for pending in batch.prefix(Self.batchSize) {
                seen.insert(pending.id)
                guard let report = try? CrashReport.decode(pending.json) else {
                    logger.error("report \(pending.id) does not decode; it is left unsymbolicated")
                    missing.append(pending)
                    continue
                }
                let unresolved = ReportSymbols.imageUses(report).filter { !$0.resolved }.map(\.buildID)
                work.append(Waiting(pending: pending, report: report, unresolved: unresolved))
            }
            guard let files = await debugFiles(for: work) else { break }
            for waiting in work {
                switch await symbolicate(waiting, files: files[waiting.pending.projectID] ?? [], with: symbolizer) {
                case .symbolicated(let update): updates.append(update)
                case .noSymbols: missing.append(waiting.pending)
                case .failed: break  // stays pending for the next round
                }
            }
            // One transaction for the batch: a commit per report would take the database's writer
            // (and a disk flush) away from ingest that often.
            do {
                try await store.markSymbolsMissing(missing)
                let applied = try await store.applySymbolication(updates).filter { $0 }.count
                symbolicated += applied
                let each = (ContinuousClock.now - started) / max(1, updates.count + missing.count)
                for _ in 0..<applied { metrics.symbolicated(duration: each) }
            } catch {
                // A lost race with another instance's transaction (or a deadlock it broke): next round.
                logger.notice("a batch of \(updates.count) symbolicated reports was not stored this time: \(error)")
            }
        }
        if let pending = try? await store.pendingSymbolicationCount() { metrics.symbolicationPending(pending) }
        return symbolicated
    }

    private func stepBackForUploads() async {
        var since = activity.isBusy ? deferringSince.withLock { $0 } : nil
        await activity.stepBack(deferringSince: &since, maxDeferral: maxDeferral) { isStopping }
        deferringSince.withLock { $0 = since }
    }

    /// A pending report, decoded once, with the build-ids its frames still lack debug-info names in.
    private struct Waiting {
        var pending: PendingReport
        var report: CrashReport
        var unresolved: [String]
    }

    /// The debug files the batch's reports could use, per project, in one query per project (nil when
    /// the store cannot be read).
    private func debugFiles(for batch: [Waiting]) async -> [Int64: [SymbolFile]]? {
        var buildIDs: [Int64: Set<String>] = [:]
        for waiting in batch { buildIDs[waiting.pending.projectID, default: []].formUnion(waiting.unresolved) }
        var files: [Int64: [SymbolFile]] = [:]
        do {
            for (projectID, ids) in buildIDs {
                files[projectID] = try await store.symbolFiles(
                    buildIDs: ids.sorted(), in: ProjectScope(projectID: projectID)
                )
                .filter(\.hasDebugInfo)
            }
        } catch {
            logger.error("cannot look up symbol files: \(error)")
            return nil
        }
        return files
    }

    enum Outcome {
        case symbolicated(SymbolicationUpdate)
        case noSymbols
        case failed
    }

    private func isAbandoned(_ buildID: String) -> Bool {
        failuresByBuildID.withLock { $0[buildID, default: 0] >= Self.maxFailuresPerFile }
    }

    /// `files`: the project's debug files for the batch's build-ids.
    private func symbolicate(_ waiting: Waiting, files: [SymbolFile], with symbolizer: SymbolizerProcess)
        async -> Outcome
    {
        let (pending, report, unresolved) = (waiting.pending, waiting.report, waiting.unresolved)
        guard files.contains(where: { unresolved.contains($0.buildID) }) else { return .noSymbols }
        var symbolicated = report
        var resolved: [String] = []
        for buildID in unresolved {
            guard let file = files.last(where: { $0.buildID == buildID }), !isAbandoned(buildID) else { continue }
            let lookups = ReportSymbols.lookups(in: symbolicated, buildID: buildID)
            guard
                let symbols = await symbolizer.symbolicate(
                    file: symbolBlobs.path(of: file.blob), addresses: lookups.map(\.address))
            else {
                metrics.symbolicationFailed()
                if isStopping { return .failed }
                let failures = failuresByBuildID.withLock { failures in
                    failures[buildID, default: 0] += 1
                    return failures[buildID, default: 0]
                }
                if failures >= Self.maxFailuresPerFile {
                    logger.error(
                        "llvm-symbolizer failed \(failures) times on \(file.fileName) (build-id \(buildID)): the file is left out; its reports are symbolicated without it"
                    )
                    continue
                }
                logger.warning(
                    "llvm-symbolizer failed on \(file.fileName) (build-id \(buildID)); report \(pending.id) stays queued"
                )
                return .failed
            }
            let byFrame = Dictionary(zip(lookups.map(\.frame), symbols), uniquingKeysWith: { first, _ in first })
            symbolicated = ReportSymbols.applying(byFrame, from: file.fileName, buildID: buildID, to: symbolicated)
            resolved.append(buildID)
        }
        do {
            return .symbolicated(
                SymbolicationUpdate(
                    report: pending, json: try CrashReport.makeEncoder().encode(symbolicated),
                    reason: symbolicated.reason ?? symbolicated.fatalMessage,
                    signature: CrashSignature.compute(symbolicated), kind: symbolicated.kind.rawValue,
                    occurredAt: symbolicated.process.crashTime, versionKey: symbolicated.app.version ?? "unknown",
                    hostKey: symbolicated.host.name.isEmpty ? "unknown" : symbolicated.host.name,
                    resolvedBuildIDs: resolved, complete: resolved.count == unresolved.count))
        } catch {
            logger.error("cannot encode report \(pending.id): \(error)")
            return .failed
        }
    }
}
