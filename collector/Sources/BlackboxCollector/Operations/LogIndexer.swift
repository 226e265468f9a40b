import Foundation
import Logging
import NIOPosix
import ServiceLifecycle

/// Puts stored log files into the full-text index in the background, so that acknowledging an upload
/// never waits for indexing text. The queue is the database (`bundle_files.indexed = 0`), so it
/// survives restarts; indexing a file is idempotent.
///
/// Ingest comes first: while uploads are arriving, the indexer waits (acknowledging an upload is
/// what clients wait for; search can be a little behind), but never longer than `maxDeferral`, after
/// which it indexes everything that is pending regardless. So a burst is absorbed at ingest speed and
/// indexed after it, and under sustained load the search index lags by at most about `maxDeferral`
/// plus the time to index the backlog.
final class LogIndexer: Service, Sendable {
    private let store: any LogIndex
    private let reader: BundleReader
    private let loop = WorkerLoop(interval: nil)
    private let logger = Logger(label: "collector.indexer")
    /// One thread of its own: indexing is background work and must not take the ingest pool's
    /// threads (inspecting uploads), which would delay acknowledgements.
    private static let pool: NIOThreadPool = {
        let pool = NIOThreadPool(numberOfThreads: 1)
        pool.start()
        return pool
    }()

    /// Longer lines are cut: a log line is for reading, not a blob store.
    static let maxLineLength = 8 << 10

    private let activity: IngestActivity
    private let maxDeferral: Duration
    private let maxLinesPerFile: Int
    /// Offered each file's lines once they are stored (`OTLPForwarder`), when logs are forwarded.
    private let forwarder: OTLPForwarder?

    init(
        store: any LogIndex, reader: BundleReader, activity: IngestActivity, maxLinesPerFile: Int = 100_000,
        maxDeferral: Duration = .seconds(30), forwarder: OTLPForwarder? = nil
    ) {
        self.store = store
        self.activity = activity
        self.reader = reader
        self.maxLinesPerFile = maxLinesPerFile
        self.maxDeferral = maxDeferral
        self.forwarder = forwarder
    }

    func wake() { loop.wake() }

    /// At shutdown the indexer stops between two files (a backlog after a burst of large bundles
    /// takes minutes); what is left stays queued for the next run.
    func run() async throws {
        await loop.run { await indexPending() }
    }

    private var isStopping: Bool { loop.isStopping }

    /// Indexes until nothing is left (also used by tests and the benchmark to wait for the index).
    /// Files are stored in batches, one transaction each: a commit per file cost a WAL sync per file
    /// and held the database's single writer away from the ingest group commit that often.
    func indexPending() async {
        var deferringSince: ContinuousClock.Instant?
        while true {
            let files: [BundleFile]
            do {
                files = try await store.unindexedLogFiles(limit: Self.filesPerBatch)
            } catch {
                logger.error("cannot list log files to index: \(error)")
                return
            }
            if files.isEmpty || isStopping { return }
            // Wait with the files in hand: on PostgreSQL, listing them claimed them for this instance.
            await activity.stepBack(deferringSince: &deferringSince, maxDeferral: maxDeferral) { isStopping }
            var batch: [LogFileLines] = []
            var offers: [Int64: ForwardedFile] = [:]
            var batchBytes = 0
            var batchLines = 0
            for sameBundle in Self.groupedByBundle(files) {
                // Stopping: what is left stays unindexed for the next run (never marked done empty).
                guard !isStopping, let (bundle, read) = await read(sameBundle) else { return }
                for (file, lines) in read {
                    batch.append(LogFileLines(fileID: file.id, lines: lines))
                    if forwarder != nil, let bundle {
                        offers[file.id] = ForwardedFile(bundle: bundle, path: file.path)
                    }
                    batchBytes += lines.reduce(0) { $0 + $1.utf8.count }
                    batchLines += lines.count
                    if batchBytes >= Self.bytesPerBatch || batchLines >= Self.linesPerBatch {
                        guard await store(batch, offering: offers) else { return }
                        batch = []
                        offers = [:]
                        batchBytes = 0
                        batchLines = 0
                    }
                }
            }
            guard await store(batch, offering: offers) else { return }
        }
    }

    /// Where a stored file's lines came from, for the forwarder (the lines are the batch's).
    struct ForwardedFile {
        var bundle: BundleRecord
        var path: String
    }

    static let filesPerBatch = 32
    /// Bounds the memory a batch holds: the lines of large files are stored as soon as they add up.
    static let bytesPerBatch = 8 << 20
    /// Bounds how long one transaction holds the database's writer away from ingest: rows, not
    /// bytes, are what an index insert costs (short lines are many rows).
    static let linesPerBatch = 50_000

    /// Runs of files of one bundle, in the order listed.
    static func groupedByBundle(_ files: [BundleFile]) -> [[BundleFile]] {
        var groups: [[BundleFile]] = []
        for file in files {
            if let last = groups.last?.last, last.bundleID == file.bundleID {
                groups[groups.count - 1].append(file)
            } else {
                groups.append([file])
            }
        }
        return groups
    }

    /// The lines of files of one bundle, read with the archive opened once, and the bundle. A file
    /// that cannot be read gets no lines (and is marked indexed), so one bad file cannot stall the
    /// queue. Nil when the indexer is being stopped.
    private func read(_ files: [BundleFile]) async -> (BundleRecord?, [(BundleFile, [String])])? {
        guard let bundleID = files.first?.bundleID else { return (nil, []) }
        do {
            guard let bundle = try await store.indexedBundle(id: bundleID) else { return (nil, files.map { ($0, []) }) }
            let blob = bundle.blob
            // Inflating and splitting block a thread: never on the async executor, where they would
            // stall request handling.
            let maxLinesPerFile = self.maxLinesPerFile
            let results = try await reader.withBundle(blob) { bundle in
                try await Self.pool.runIfActive {
                    try bundle.lines(of: files.map(\.path), maxLineBytes: Self.maxLineLength, maxLines: maxLinesPerFile)
                }
            }
            return (
                bundle,
                files.map { file in
                    switch results[file.path] {
                    case .success(let lines)?: return (file, lines)
                    case .failure(let error)?:
                        logger.warning("cannot index \(file.path) of bundle \(bundleID): \(error)")
                        return (file, [])
                    case nil: return (file, [])
                    }
                }
            )
        } catch is CancellationError {
            return nil
        } catch {
            logger.warning("cannot index the logs of bundle \(bundleID): \(error)")
            return (nil, files.map { ($0, []) })
        }
    }

    /// If the batch's transaction fails, its files are stored one by one. A file that still fails
    /// stays queued, unmarked (a full disk must not leave files "indexed" with no lines forever),
    /// and this pass ends; the next wake-up tries again. False when something was left queued.
    /// Once stored, the batch's lines are offered to the forwarder (a file stored again after a failed
    /// batch is offered then).
    @discardableResult
    private func store(_ batch: [LogFileLines], offering offers: [Int64: ForwardedFile]) async -> Bool {
        guard !batch.isEmpty else { return true }
        func offer(_ stored: LogFileLines) {
            guard let file = offers[stored.fileID] else { return }
            forwarder?.offer(bundle: file.bundle, path: file.path, lines: stored.lines)
        }
        do {
            try await store.storeLogLines(batch)
            for file in batch { offer(file) }
            return true
        } catch {
            logger.warning("storing the lines of \(batch.count) log files failed (\(error)); retrying one by one")
            var stored = true
            for file in batch {
                do {
                    try await store.storeLogLines([file])
                    offer(file)
                } catch {
                    logger.warning("cannot store the lines of log file \(file.fileID) (\(error)); it stays queued")
                    stored = false
                }
            }
            return stored
        }
    }
}
