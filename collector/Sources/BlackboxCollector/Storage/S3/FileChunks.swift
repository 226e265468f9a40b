import BlackboxSystem
import Crypto
import Foundation
import NIOCore
import NIOPosix

/// A range of an open file as buffers of at most `chunkBytes`, each read on NIO's thread pool (a
/// read may wait on the disk; a cooperative thread must not). The caller keeps the descriptor open
/// until the sequence is done. A file shorter than the range is an error: an object must never be
/// stored shorter than the length its request announced.
struct FileChunks: AsyncSequence, Sendable {
    typealias Element = ByteBuffer

    let descriptor: Int32
    let path: String
    let offset: Int64
    let count: Int64
    var chunkBytes = 256 << 10

    struct AsyncIterator: AsyncIteratorProtocol {
        let chunks: FileChunks
        var done: Int64 = 0

        mutating func next() async throws -> ByteBuffer? {
            guard done < chunks.count else { return nil }
            let wanted = Int(Swift.min(Int64(chunks.chunkBytes), chunks.count - done))
            let (descriptor, path, at) = (chunks.descriptor, chunks.path, chunks.offset + done)
            let buffer = try await NIOThreadPool.singleton.runIfActive {
                var buffer = ByteBuffer()
                try buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: wanted) { pointer in
                    var filled = 0
                    while filled < wanted {
                        let read = retryingEINTR {
                            pread(descriptor, pointer.baseAddress! + filled, wanted - filled, off_t(at) + off_t(filled))
                        }
                        guard read > 0 else {
                            throw StorageError.io(
                                path: path, read == 0 ? SystemCallError("pread", errno: EIO) : SystemCallError("pread"))
                        }
                        filled += read
                    }
                    return filled
                }
                return buffer
            }
            done += Int64(buffer.readableBytes)
            return buffer
        }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(chunks: self) }

    /// The range's SHA-256, as lowercase hex: what a request's `x-amz-content-sha256` signs.
    func sha256() async throws -> String {
        var hash = SHA256()
        for try await chunk in self {
            chunk.withUnsafeReadableBytes { hash.update(bufferPointer: $0) }
        }
        return hash.finalize().lowercaseHex
    }
}
