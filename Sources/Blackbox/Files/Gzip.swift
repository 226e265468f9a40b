import BlackboxSystem
import CBlackboxZlib

#if canImport(Glibc)
    import Glibc
#endif

/// gzip-compresses a file with zlib, crash-safely: the output goes to `<destination>.tmp`, is
/// fsynced, then renamed into place. The source is left alone (the caller deletes it).
package enum Gzip {
    package enum Failure: Error, CustomStringConvertible {
        /// A system call failed (its errno kept).
        case system(SystemError)
        case zlib(path: String, code: Int32)
        case tooLarge(path: String, limit: Int)

        package var description: String {
            switch self {
            case .system(let failure): "cannot compress \(failure.path ?? ""): \(failure.operation): \(failure.reason)"
            case .zlib(let path, let code): "cannot compress \(path): zlib error \(code)"
            case .tooLarge(let path, let limit): "cannot decompress \(path): more than \(limit) bytes"
            }
        }
    }

    package static func compress(_ source: String, to destination: String, level: Int32 = 6) throws(Failure) {
        let input = open(source, O_RDONLY | O_CLOEXEC)
        guard input >= 0 else { throw .system(SystemError("open", path: source)) }
        defer { close(input) }
        let temporary = destination + ".tmp"
        let output = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard output >= 0 else { throw .system(SystemError("open", path: temporary)) }
        var succeeded = false
        defer {
            close(output)
            if !succeeded { unlink(temporary) }
        }
        var stream = z_stream()
        // windowBits 15 + 16: write a gzip header and trailer instead of a raw zlib stream.
        let initialized = deflateInit2_(
            &stream, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY, ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size)
        )
        guard initialized == Z_OK else { throw .zlib(path: source, code: initialized) }
        defer { deflateEnd(&stream) }

        let chunk = 128 << 10
        let inBuffer = UnsafeMutablePointer<UInt8>.allocate(capacity: chunk)
        let outBuffer = UnsafeMutablePointer<UInt8>.allocate(capacity: chunk)
        defer {
            inBuffer.deallocate()
            outBuffer.deallocate()
        }
        var finished = false
        while !finished {
            let n = read(input, inBuffer, chunk)
            guard n >= 0 else { throw .system(SystemError("read", path: source)) }
            stream.next_in = inBuffer
            stream.avail_in = UInt32(n)
            let flush = n == 0 ? Z_FINISH : Z_NO_FLUSH
            repeat {
                stream.next_out = outBuffer
                stream.avail_out = UInt32(chunk)
                let rc = deflate(&stream, flush)
                guard rc != Z_STREAM_ERROR else { throw .zlib(path: source, code: rc) }
                let produced = chunk - Int(stream.avail_out)
                guard writeFully(output, outBuffer, produced) else {
                    throw .system(SystemError("write", path: temporary))
                }
                if rc == Z_STREAM_END { finished = true }
            } while stream.avail_out == 0
        }
        guard fsync(output) == 0 else { throw .system(SystemError("fsync", path: temporary)) }
        guard rename(temporary, destination) == 0 else { throw .system(SystemError("rename", path: destination)) }
        succeeded = true
    }

    /// Reads a whole gzip file back (for tests and the CLI); bounded by `limit` bytes of output.
    package static func decompress(_ path: String, limit: Int = 1 << 30) throws(Failure) -> [UInt8] {
        guard let file = gzopen(path, "rb") else { throw .system(SystemError("gzopen", path: path)) }
        defer { gzclose(file) }
        var result: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 64 << 10)
        while true {
            let n = buffer.withUnsafeMutableBytes { gzread(file, $0.baseAddress, UInt32($0.count)) }
            if n < 0 { throw .zlib(path: path, code: n) }
            if n == 0 { break }
            result.append(contentsOf: buffer[0..<Int(n)])
            if result.count > limit { throw .tooLarge(path: path, limit: limit) }
        }
        return result
    }

    /// The first `count` bytes a gzip file decompresses to (fewer when it is shorter): a file's
    /// first line without inflating the whole file.
    package static func prefix(_ path: String, count: Int) throws(Failure) -> [UInt8] {
        guard let file = gzopen(path, "rb") else { throw .system(SystemError("gzopen", path: path)) }
        defer { gzclose(file) }
        var result = [UInt8](repeating: 0, count: count)
        var filled = 0
        while filled < count {
            let n = result.withUnsafeMutableBytes {
                gzread(file, $0.baseAddress.map { $0 + filled }, UInt32(count - filled))
            }
            if n < 0 { throw .zlib(path: path, code: n) }
            if n == 0 { break }
            filled += Int(n)
        }
        return Array(result.prefix(filled))
    }
}
