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
/// `pollInterval` for work other instances queued.
final class SymbolicationService: Service, Sendable {
    typealias Store = SymbolIndex & SymbolicationStore
    private let store: any Store
    private let symbolBlobs: BlobStore
    /// Nil when no llvm-symbolizer is installed: reports stay pending, and `/ready` and `/metrics` say so.
    let symbolizer: SymbolizerProcess?
    private let metrics: CollectorMetrics
    private let pollInterval: Duration
    private let wakeups: AsyncStream<Void>
    private let wakeContinuation: AsyncStream<Void>.Continuation
    private let stopping = Atomic<Bool>(false)
    private let logger = Logger(label: "collector.symbolication")
    static let batchSize = 50

    init(
        store: any Store, symbolBlobs: BlobStore, symbolizer: SymbolizerProcess?, metrics: CollectorMetrics,
        pollInterval: Duration = .seconds(60)
    ) {
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
        }
    }

    private var isStopping: Bool { Task.isCancelled || stopping.load(ordering: .relaxed) }

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
            var missing: [PendingReport] = []
            for pending in batch.prefix(Self.batchSize) {
                seen.insert(pending.id)
                switch await symbolicate(pending, with: symbolizer) {
                case .applied: symbolicated += 1
                case .noSymbols: missing.append(pending)
                case .failed: break  // stays pending for the next round
                }
            }
            do {
                try await store.markSymbolsMissing(missing)
            } catch {
                logger.error("cannot record reports waiting for symbols: \(error)")
            }
        }
        if let pending = try? await store.pendingSymbolicationCount() { metrics.symbolicationPending(pending) }
        return symbolicated
    }

    enum Outcome {
        case applied
        case noSymbols
        case failed
    }

    private func symbolicate(_ pending: PendingReport, with symbolizer: SymbolizerProcess) async -> Outcome {
        let started = ContinuousClock.now
        guard let report = try? CrashReport.decode(pending.json) else {
            logger.error("report \(pending.id) does not decode; it is left unsymbolicated")
            return .noSymbols
        }
        let unresolved = ReportSymbols.imageUses(report).filter { !$0.resolved }.map(\.buildID)
        let files: [SymbolFile]
        do {
            files = try await store.symbolFiles(buildIDs: unresolved, in: ProjectScope(projectID: pending.projectID))
                .filter(\.hasDebugInfo)
        } catch {
            logger.error("cannot look up symbols for report \(pending.id): \(error)")
            return .failed
        }
        guard !files.isEmpty else { return .noSymbols }
        var symbolicated = report
        var resolved: [String] = []
        for buildID in unresolved {
            guard let file = files.last(where: { $0.buildID == buildID }) else { continue }
            let lookups = ReportSymbols.lookups(in: symbolicated, buildID: buildID)
            guard
                let symbols = await symbolizer.symbolicate(
                    file: symbolBlobs.path(of: file.blob), addresses: lookups.map(\.address))
            else {
                metrics.symbolicationFailed()
                logger.warning(
                    "llvm-symbolizer failed on \(file.fileName) (build-id \(buildID)); report \(pending.id) stays queued"
                )
                return .failed
            }
            let byFrame = Dictionary(zip(lookups.map(\.frame), symbols), uniquingKeysWith: { first, _ in first })
            symbolicated = ReportSymbols.applying(byFrame, from: file.fileName, buildID: buildID, to: symbolicated)
            resolved.append(buildID)
        }
        let update: SymbolicationUpdate
        do {
            update = SymbolicationUpdate(
                report: pending, json: try CrashReport.makeEncoder().encode(symbolicated),
                reason: symbolicated.reason ?? symbolicated.fatalMessage,
                signature: CrashSignature.compute(symbolicated), kind: symbolicated.kind.rawValue,
                occurredAt: symbolicated.process.crashTime, versionKey: symbolicated.app.version ?? "unknown",
                hostKey: symbolicated.host.name.isEmpty ? "unknown" : symbolicated.host.name,
                resolvedBuildIDs: resolved, complete: resolved.count == unresolved.count)
        } catch {
            logger.error("cannot encode report \(pending.id): \(error)")
            return .failed
        }
        do {
            guard try await store.applySymbolication(update) else { return .failed }
        } catch {
            // A lost race with another instance's transaction (or a deadlock it broke): next round.
            logger.notice("report \(pending.id) not symbolicated this time: \(error)")
            return .failed
        }
        metrics.symbolicated(duration: ContinuousClock.now - started)
        return .applied
    }
}
