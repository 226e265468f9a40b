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
/// A shared resource with hard bounds, because any project's symbols key can upload a debug file
/// that stalls or bloats llvm-symbolizer:
/// - **Lanes**: one symbolizer each (`SymbolizerProcess`: memory-limited, restarted past a resident
///   budget, a deadline per file). A project is worked on by one lane at a time, and lanes take the
///   project served longest ago, so a project whose files stall its lane holds that lane only and
///   every other project's reports go on in the others.
/// - **Attempts**: a failed lookup counts against the debug file (`maxFailuresPerFile`, then the file
///   is left out for good and its reports are symbolicated without it, `failed` with the reason) and
///   against the report (`maxAttemptsPerReport`, retried after `retryDelay`, then `failed`). Both are
///   stored, so a restart does not start the count again.
/// - A lane leaves a project after `maxTimePerTurn` for the next one waiting.
///
/// Woken by ingest (new pending reports) and by symbol uploads (late symbols), and every
/// `pollInterval` for work other instances queued. Like the log indexer, it steps back while uploads
/// are arriving (`IngestActivity`), for at most `maxDeferral` per batch.
final class SymbolicationService: Service, Sendable {
    typealias Store = SymbolIndex & SymbolicationStore
    private let store: any Store
    private let symbolBlobs: any BlobStorage
    /// One per lane; empty when no llvm-symbolizer is installed: reports stay pending, and `/ready`
    /// and `/metrics` say so.
    let symbolizers: [SymbolizerProcess]
    private let metrics: CollectorMetrics
    private let activity: IngestActivity
    private let maxDeferral: Duration
    private let retryDelay: Duration
    private let maxTimePerTurn: Duration
    /// One loop per lane, each also woken every `pollInterval` for work other instances queued.
    private let lanes: [WorkerLoop]
    /// When the service started stepping back for uploads, across passes: under sustained ingest it
    /// waits `maxDeferral` once, not before every pass (each upload with a report starts one).
    private let deferringSince = Mutex<ContinuousClock.Instant?>(nil)
    private let turns = Mutex(Turns())
    private let logger = Logger(label: "collector.symbolication")
    static let batchSize = 20
    static let maxFailuresPerFile = 3
    static let maxAttemptsPerReport = 3

    /// Which projects a lane works on now, and when each was last served.
    private struct Turns {
        var busy: Set<Int64> = []
        var lastServed: [Int64: UInt64] = [:]
        var clock: UInt64 = 0
    }

    init(
        store: any Store, symbolBlobs: any BlobStorage, symbolizers: [SymbolizerProcess], metrics: CollectorMetrics,
        activity: IngestActivity = IngestActivity(), maxDeferral: Duration = .seconds(2),
        pollInterval: Duration = .seconds(60), retryDelay: Duration = .seconds(60),
        maxTimePerTurn: Duration = .seconds(10)
    ) {
        self.activity = activity
        self.maxDeferral = maxDeferral
        self.store = store
        self.symbolBlobs = symbolBlobs
        self.symbolizers = symbolizers
        self.metrics = metrics
        self.retryDelay = retryDelay
        self.maxTimePerTurn = maxTimePerTurn
        lanes = symbolizers.indices.map { _ in WorkerLoop(interval: pollInterval) }
        metrics.symbolizerAvailable(!symbolizers.isEmpty)
    }

    /// The symbolizer's path, for `/ready` and the symbols page.
    var executable: String? { symbolizers.first?.executable }

    func wake() { for lane in lanes { lane.wake() } }

    /// At shutdown each lane's symbolizer is killed, so a lookup in progress returns at once.
    func run() async throws {
        guard !symbolizers.isEmpty else {
            logger.warning("llvm-symbolizer not found: reports are not symbolicated on the collector (see /ready)")
            try? await gracefulShutdown()
            return
        }
        await withTaskGroup(of: Void.self) { group in
            for (lane, loop) in lanes.enumerated() {
                group.addTask { [self] in
                    await loop.run(onStop: { [symbolizers] in symbolizers[lane].stop() }) {
                        _ = await drain(lane: lane)
                    }
                }
            }
        }
    }

    private var isStopping: Bool { Task.isCancelled || lanes.contains { $0.isStopping } }

    /// Works through every project's due reports on all lanes until none is left, waiting for
    /// projects other callers are working on; returns how many reports were symbolicated here (tests
    /// and the benchmark use it to wait for the service).
    @discardableResult
    func symbolicatePending() async -> Int {
        guard !symbolizers.isEmpty else { return 0 }
        var symbolicated = 0
        while !isStopping {
            symbolicated += await withTaskGroup(of: Int.self) { group in
                for lane in symbolizers.indices { group.addTask { await self.drain(lane: lane) } }
                return await group.reduce(0, +)
            }
            let othersWorking = turns.withLock { !$0.busy.isEmpty }
            let due = (try? await store.projectsDueForSymbolication(at: Date())) ?? []
            guard othersWorking || !due.isEmpty else { break }
            try? await Task.sleep(for: .milliseconds(50))
        }
        return symbolicated
    }

    /// One lane's work: the due project served longest ago that no other lane has, a batch of its
    /// reports, until no such project is left.
    private func drain(lane: Int) async -> Int {
        var symbolicated = 0
        while !isStopping, let project = await claimProject() {
            defer { release(project) }
            symbolicated += await symbolicateProject(project, with: symbolizers[lane])
        }
        if let pending = try? await store.pendingSymbolicationCount() { metrics.symbolicationPending(pending) }
        return symbolicated
    }

    private func claimProject() async -> Int64? {
        let due: [Int64]
        do {
            due = try await store.projectsDueForSymbolication(at: Date())
        } catch {
            logger.error("cannot read the symbolication queue: \(error)")
            return nil
        }
        return turns.withLock { turns in
            let waiting = due.filter { !turns.busy.contains($0) }
            guard let next = waiting.min(by: { turns.lastServed[$0, default: 0] < turns.lastServed[$1, default: 0] })
            else { return nil }
            turns.busy.insert(next)
            turns.clock += 1
            turns.lastServed[next] = turns.clock
            return next
        }
    }

    private func release(_ project: Int64) { _ = turns.withLock { $0.busy.remove(project) } }

    /// Batches of one project's due reports, until none is left or its turn is over.
    private func symbolicateProject(_ projectID: Int64, with symbolizer: SymbolizerProcess) async -> Int {
        let turnEnds = ContinuousClock.now + maxTimePerTurn
        var symbolicated = 0
        while !isStopping, ContinuousClock.now < turnEnds {
            let batch: [PendingReport]
            do {
                batch = try await store.pendingSymbolication(projectID: projectID, at: Date(), limit: Self.batchSize)
            } catch {
                logger.error("cannot read the symbolication queue: \(error)")
                break
            }
            guard !batch.isEmpty else { break }
            await stepBackForUploads()
            symbolicated += await symbolicate(batch, of: projectID, with: symbolizer, until: turnEnds)
        }
        return symbolicated
    }

    private func symbolicate(
        _ batch: [PendingReport], of projectID: Int64, with symbolizer: SymbolizerProcess,
        until turnEnds: ContinuousClock.Instant
    ) async -> Int {
        var missing: [PendingReport] = []
        var updates: [SymbolicationUpdate] = []
        let started = ContinuousClock.now
        var work: [Waiting] = []
        for pending in batch {
            guard let report = try? CrashReport.decode(pending.json) else {
                logger.error("report \(pending.id) does not decode; it is left unsymbolicated")
                missing.append(pending)
                continue
            }
            let unresolved = ReportSymbols.imageUses(report).filter { !$0.resolved }.map(\.buildID)
            work.append(Waiting(pending: pending, report: report, unresolved: unresolved))
        }
        var files: [SymbolFile]
        do {
            files = try await store.symbolFiles(
                buildIDs: Set(work.flatMap(\.unresolved)).sorted(), in: ProjectScope(projectID: projectID)
            )
            .filter(\.hasDebugInfo)
        } catch {
            logger.error("cannot look up symbol files: \(error)")
            return 0
        }
        var failed: [(PendingReport, String)] = []
        for waiting in work where !isStopping && ContinuousClock.now < turnEnds {
            switch await symbolicate(waiting, files: &files, with: symbolizer) {
            case .symbolicated(let update): updates.append(update)
            case .noSymbols: missing.append(waiting.pending)
            case .failed(let reason): failed.append((waiting.pending, reason))
            case .interrupted: break  // stays due
            }
        }
        // One transaction for the batch: a commit per report would take the database's writer
        // (and a disk flush) away from ingest that often.
        do {
            try await store.markSymbolsMissing(missing)
            for (report, reason) in failed {
                try await store.symbolicationFailed(
                    report, reason: reason, retryAt: Date().addingTimeInterval(Double(retryDelay.components.seconds)),
                    maxAttempts: Self.maxAttemptsPerReport)
            }
            let applied = try await store.applySymbolication(updates).filter { $0 }.count
            let each = (ContinuousClock.now - started) / max(1, updates.count + missing.count)
            for _ in 0..<applied { metrics.symbolicated(duration: each) }
            return applied
        } catch {
            // A lost race with another instance's transaction (or a deadlock it broke): next round.
            logger.notice("a batch of \(updates.count) symbolicated reports was not stored this time: \(error)")
            return 0
        }
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

    enum Outcome {
        case symbolicated(SymbolicationUpdate)
        case noSymbols
        /// A lookup failed: counted against the report, with the reason.
        case failed(String)
        /// Shutdown, or the turn is over: not counted.
        case interrupted
    }

    /// `files`: the project's debug files for the batch's build-ids, the first uploaded of each
    /// build-id used (a later one does not replace it: `SymbolUpload`), each with its failed lookups
    /// so far, which this counts on.
    private func symbolicate(_ waiting: Waiting, files: inout [SymbolFile], with symbolizer: SymbolizerProcess)
        async -> Outcome
    {
        let (pending, report, unresolved) = (waiting.pending, waiting.report, waiting.unresolved)
        guard files.contains(where: { unresolved.contains($0.buildID) }) else { return .noSymbols }
        var symbolicated = report
        var resolved: [String] = []
        var leftOut: [String] = []
        for buildID in unresolved {
            guard let index = files.firstIndex(where: { $0.buildID == buildID }) else { continue }
            let file = files[index]
            guard !file.isLeftOut else {
                leftOut.append(
                    "llvm-symbolizer failed \(file.symbolizerFailures) times on \(file.fileName) (build-id \(buildID)), which is left out"
                )
                continue
            }
            let lookups = ReportSymbols.lookups(in: symbolicated, buildID: buildID)
            // A blob that cannot be had counts as a failed lookup: retried, then left out.
            let symbols = try? await symbolBlobs.withLocalFile(of: file.blob) { local in
                await symbolizer.symbolicate(file: local, addresses: lookups.map(\.address))
            }
            guard let symbols = symbols ?? nil else {
                if isStopping { return .interrupted }
                metrics.symbolicationFailed()
                let failures =
                    (try? await store.recordSymbolizerFailure(fileID: file.id)) ?? file.symbolizerFailures + 1
                files[index].symbolizerFailures = failures
                if failures == Self.maxFailuresPerFile { metrics.symbolFileLeftOut() }
                let reason =
                    "llvm-symbolizer failed on \(file.fileName) (build-id \(buildID)): it timed out, crashed or outgrew its memory limit"
                logger.warning(
                    "\(reason); report \(pending.id), failure \(failures) of \(Self.maxFailuresPerFile) for the file")
                return .failed(reason)
            }
            let byFrame = Dictionary(zip(lookups.map(\.frame), symbols), uniquingKeysWith: { first, _ in first })
            symbolicated = ReportSymbols.applying(byFrame, from: file.fileName, buildID: buildID, to: symbolicated)
            resolved.append(buildID)
        }
        return .symbolicated(
            SymbolicationUpdate(
                report: pending, json: symbolicated.encoded(),
                reason: symbolicated.reason ?? symbolicated.fatalMessage,
                diagnosis: symbolicated.diagnosis?.kind.rawValue, signature: CrashSignature.compute(symbolicated),
                kind: symbolicated.kind.rawValue,
                occurredAt: symbolicated.process.crashTime, versionKey: symbolicated.versionKey,
                hostKey: symbolicated.hostKey,
                resolvedBuildIDs: resolved, complete: resolved.count == unresolved.count,
                failure: leftOut.isEmpty ? nil : leftOut.joined(separator: "; ")))
    }
}

extension SymbolFile {
    /// Failed the symbolizer `SymbolicationService.maxFailuresPerFile` times: no longer used.
    var isLeftOut: Bool { symbolizerFailures >= SymbolicationService.maxFailuresPerFile }
}
