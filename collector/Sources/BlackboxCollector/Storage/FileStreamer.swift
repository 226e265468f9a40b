import Foundation
import Hummingbird
import NIOCore
import NIOPosix
import Synchronization

/// Streams one file of a stored bundle to a client without holding it in memory: a thread of a
/// small pool of its own inflates it chunk by chunk and stays at most a few chunks ahead of the
/// client, so a 256 MiB log costs a few hundred KiB however slow the reader is. The pool is
/// separate from ingest's, so downloads never delay uploads; at most four files are inflated at
/// once, more wait their turn.
///
/// Hand-written because ZIPFoundation extracts through a synchronous callback, which cannot await
/// an HTTP writer; a semaphore is the bridge (the producer thread waits for room, the writer gives
/// room back after each chunk it sent).
struct FileStreamer: Sendable {
    let reader: BundleReader
    static let chunkBytes = 64 << 10
    static let chunksAhead = 4
    /// Process-wide, like the indexer's: four files inflated at once at most.
    private static let pool: NIOThreadPool = {
        let pool = NIOThreadPool(numberOfThreads: 4)
        pool.start()
        return pool
    }()

    private final class Flow: Sendable {
        let room = DispatchSemaphore(value: FileStreamer.chunksAhead)
        let stopped = Atomic<Bool>(false)
    }

    /// The response body of the file's bytes; it ends with an error if the file cannot be read.
    /// The bundle stays readable as a local file while the body is written (`withBundle`).
    func body(of path: String, inBlob blob: String) -> ResponseBody {
        let reader = self.reader
        return ResponseBody { writer in
            try await reader.withBundle(blob) { bundle in
                let (chunks, flow) = Self.chunks(of: path, in: bundle)
                for try await chunk in chunks {
                    try await writer.write(chunk)
                    flow.room.signal()
                }
            }
            try await writer.finish(nil)
        }
    }

    /// The file's bytes, inflated on a thread of the pool, which waits for `flow.room` before each
    /// chunk: the consumer signals it once a chunk is sent.
    private static func chunks(of path: String, in bundle: LocalBundle) -> (
        AsyncThrowingStream<ByteBuffer, any Error>, Flow
    ) {
        let (stream, continuation) = AsyncThrowingStream.makeStream(of: ByteBuffer.self)
        let flow = Flow()
        continuation.onTermination = { _ in
            flow.stopped.store(true, ordering: .relaxed)
            flow.room.signal()
        }
        pool.submit { state in
            guard case .active = state else { return continuation.finish(throwing: CancellationError()) }
            do {
                try bundle.extract(path, chunkBytes: chunkBytes) { chunk in
                    flow.room.wait()
                    if flow.stopped.load(ordering: .relaxed) { throw CancellationError() }
                    continuation.yield(ByteBuffer(data: chunk))
                }
                continuation.finish()
            } catch {
                continuation.finish(throwing: error)
            }
        }
        return (stream, flow)
    }
}
