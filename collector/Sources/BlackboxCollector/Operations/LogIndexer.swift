import Foundation
import Logging
import NIOPosix
import ServiceLifecycle

/// Puts stored log files into the full-text index in the background, so that acknowledging an upload
/// never waits for indexing text. The queue is the database (`bundle_files.indexed = 0`), so it
/// survives restarts; indexing a file is idempotent.
final class LogIndexer: Service, Sendable {
    private let store: any CollectorStore
    private let reader: BundleReader
    private let wakeups: AsyncStream<Void>
    private let wakeContinuation: AsyncStream<Void>.Continuation
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

    init(store: any CollectorStore, reader: BundleReader) {
        self.store = store
        self.reader = reader
        (wakeups, wakeContinuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    func wake() { wakeContinuation.yield() }

    func run() async throws {
        wake()  // whatever a previous run left
        await withGracefulShutdownHandler {
            for await _ in wakeups {
                await indexPending()
            }
        } onGracefulShutdown: { [wakeContinuation] in
            wakeContinuation.finish()
        }
    }

    /// Indexes until nothing is left (also used by tests and the benchmark to wait for the index).
    func indexPending() async {
        while true {
            let files: [BundleFile]
            do {
                files = try await store.unindexedLogFiles(limit: 16)
            } catch {
                logger.error("cannot list log files to index: \(error)")
                return
            }
            if files.isEmpty { return }
            for file in files {
                do {
                    guard let bundle = try await store.bundle(id: file.bundleID) else { continue }
                    // Inflating and splitting block a thread: never on the async executor, where they
                    // would stall request handling.
                    let reader = self.reader
                    let lines = try await Self.pool.runIfActive {
                        try reader.lines(of: file.path, inBlob: bundle.blob, maxLineBytes: Self.maxLineLength)
                    }
                    try await store.storeLogLines(fileID: file.id, lines: lines)
                } catch {
                    // Marked indexed (with no lines) so one bad file cannot stall the queue.
                    logger.warning("cannot index \(file.path) of bundle \(file.bundleID): \(error)")
                    try? await store.storeLogLines(fileID: file.id, lines: [])
                }
            }
        }
    }
}
