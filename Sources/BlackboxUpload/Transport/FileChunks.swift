import BlackboxSystem

#if Upload
    import NIOCore

    #if canImport(Glibc)
        import Glibc
    #endif

    /// A file's bytes as an async sequence of buffers, for streaming a bundle as a request body without
    /// holding it in memory. Optionally paced to a byte rate, and reporting progress as it goes.
    struct FileChunks: AsyncSequence, Sendable {
        typealias Element = ByteBuffer
        let path: String
        var chunkSize = 64 << 10
        /// Bytes per second, or nil for as fast as the connection takes them.
        var rateLimit: Int?
        var progress: @Sendable (Int64) -> Void = { _ in }

        func makeAsyncIterator() -> Iterator { Iterator(chunks: self) }

        struct Iterator: AsyncIteratorProtocol {
            let chunks: FileChunks
            var file: OpenFile?
            var finished = false
            var sent: Int64 = 0
            var started: ContinuousClock.Instant = ContinuousClock.now

            init(chunks: FileChunks) { self.chunks = chunks }

            mutating func next() async throws -> ByteBuffer? {
                if finished { return nil }
                if file == nil {
                    file = try OpenFile(path: chunks.path)
                    started = ContinuousClock.now
                }
                guard let file else { return nil }
                if let rate = chunks.rateLimit {
                    // Wait until the bytes sent so far fit the rate.
                    let due: ContinuousClock.Instant =
                        started + Duration.milliseconds(sent * 1000 / Int64(Swift.max(1, rate)))
                    if due > ContinuousClock.now { try await Task.sleep(until: due, clock: .continuous) }
                }
                let size =
                    chunks.rateLimit.map { Swift.min(chunks.chunkSize, Swift.max(1024, $0 / 10)) } ?? chunks.chunkSize
                var buffer = ByteBufferAllocator().buffer(capacity: size)
                let count = try buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: size) { bytes in
                    try file.read(into: bytes.baseAddress!, count: size)
                }
                guard count > 0 else {
                    finished = true
                    self.file = nil
                    return nil
                }
                sent += Int64(count)
                chunks.progress(sent)
                return buffer
            }
        }

        /// Owns the descriptor, so that a body abandoned halfway (a failed request) still closes it.
        final class OpenFile {
            let path: String
            let descriptor: Int32

            init(path: String) throws {
                self.path = path
                descriptor = open(path, O_RDONLY | O_CLOEXEC)
                guard descriptor >= 0 else { throw UploadFailure.file(path, errnoDescription()) }
            }

            func read(into buffer: UnsafeMutableRawPointer, count: Int) throws -> Int {
                let n = retryingEINTR { Glibc.read(descriptor, buffer, count) }
                guard n >= 0 else { throw UploadFailure.file(path, errnoDescription()) }
                return n
            }

            deinit { close(descriptor) }
        }
    }
#endif
