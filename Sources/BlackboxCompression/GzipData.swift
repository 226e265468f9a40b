import CBlackboxZlib

/// Decompresses gzip (or zlib) data in memory, bounded: for reading `.gz` log archives that arrive
/// from elsewhere (the collector, the CLI), where a small file may claim to inflate to anything.
public enum GzipData {
    public struct Failure: Error, CustomStringConvertible {
        public var description: String
    }

    /// Concatenated gzip members (what `cat a.gz b.gz` makes) are decompressed one after the other.
    public static func decompress(_ input: [UInt8], limit: Int) throws(Failure) -> [UInt8] {
        let inflater = try GzipInflater()
        var output: [UInt8] = []
        do {
            try input.withUnsafeBytes { bytes in
                try inflater.feed(bytes) { piece in
                    if output.count + piece.count > limit {
                        throw Failure(description: "inflates past the limit of \(limit) bytes")
                    }
                    output.append(contentsOf: piece)
                }
            }
        } catch let failure as Failure {
            throw failure
        } catch {
            throw Failure(description: "\(error)")
        }
        guard inflater.atMemberEnd || input.isEmpty else {
            throw Failure(description: "truncated or invalid gzip data")
        }
        return output
    }

    /// gzip-compresses bytes in memory (request bodies of a known, bounded size).
    public static func compress(_ input: [UInt8], level: Int32 = 6) throws(Failure) -> [UInt8] {
        var stream = z_stream()
        // windowBits 15 + 16: a gzip header and trailer rather than a raw zlib stream.
        let initialized = deflateInit2_(
            &stream, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY, ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size)
        )
        guard initialized == Z_OK else { throw Failure(description: "zlib deflateInit2 failed (\(initialized))") }
        defer { deflateEnd(&stream) }
        var output = [UInt8](repeating: 0, count: Int(deflateBound(&stream, UInt(input.count))) + 32)
        var input = input
        let code = input.withUnsafeMutableBufferPointer { source in
            output.withUnsafeMutableBufferPointer { destination in
                stream.next_in = source.baseAddress
                stream.avail_in = UInt32(source.count)
                stream.next_out = destination.baseAddress
                stream.avail_out = UInt32(destination.count)
                return deflate(&stream, Z_FINISH)
            }
        }
        guard code == Z_STREAM_END else { throw Failure(description: "zlib deflate failed (\(code))") }
        output.removeLast(Int(stream.avail_out))
        return output
    }
}

/// Inflates gzip (or zlib) data handed to it piece by piece, so that a reader can stop as soon as it
/// has what it wants (the collector's log viewer shows the start of an archive without inflating,
/// or even reading, the rest).
public final class GzipInflater {
    // zlib keeps a pointer back to its stream: it must never move, so it is not a stored struct.
    private let stream: UnsafeMutablePointer<z_stream>
    private var chunk = [UInt8](repeating: 0, count: 64 << 10)
    /// At the end of a gzip member: the data so far is complete (another member may follow).
    public private(set) var atMemberEnd = false

    public init() throws(GzipData.Failure) {
        stream = .allocate(capacity: 1)
        stream.initialize(to: z_stream())
        // 15 + 32: accept both gzip and zlib headers.
        guard inflateInit2_(stream, 15 + 32, ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size)) == Z_OK else {
            stream.deallocate()
            throw GzipData.Failure(description: "zlib cannot start")
        }
    }

    deinit {
        inflateEnd(stream)
        stream.deallocate()
    }

    /// Inflates all of `input`, handing the output to `output` piece by piece; `output` may throw to
    /// stop early.
    public func feed(_ input: UnsafeRawBufferPointer, output: (ArraySlice<UInt8>) throws -> Void) throws {
        guard let base = input.baseAddress?.assumingMemoryBound(to: UInt8.self), !input.isEmpty else { return }
        if atMemberEnd { inflateReset(stream) }  // the previous piece ended exactly with a member
        var offset = 0
        while offset < input.count {
            stream.pointee.next_in = UnsafeMutablePointer(mutating: base + offset)
            stream.pointee.avail_in = UInt32(min(input.count - offset, Int(UInt32.max)))
            atMemberEnd = false
            repeat {
                let result = chunk.withUnsafeMutableBufferPointer { out in
                    stream.pointee.next_out = out.baseAddress
                    stream.pointee.avail_out = UInt32(out.count)
                    return inflate(stream, Z_NO_FLUSH)
                }
                let produced = chunk.count - Int(stream.pointee.avail_out)
                if produced > 0 { try output(chunk[0..<produced]) }
                if result == Z_STREAM_END {
                    atMemberEnd = true
                    break
                }
                guard result == Z_OK || result == Z_BUF_ERROR else {
                    throw GzipData.Failure(description: "not valid gzip data (zlib error \(result))")
                }
            } while stream.pointee.avail_out == 0
            let consumed = input.count - offset - Int(stream.pointee.avail_in)
            offset += consumed
            if atMemberEnd {
                if offset < input.count { inflateReset(stream) }  // another member follows
            } else if consumed == 0 {
                break
            }
        }
    }
}

/// zlib's CRC-32 (the zip and gzip checksum). For the collector, which checks every uploaded entry:
/// ZIPFoundation on Linux falls back to a byte-at-a-time Swift CRC that cost more than inflating.
public enum ZlibCRC32 {
    /// The checksum of `bytes` continued from `checksum` (0 to start).
    public static func update(_ checksum: UInt32, with bytes: UnsafeRawBufferPointer) -> UInt32 {
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return checksum }
        var result = UInt(checksum)
        var offset = 0
        while offset < bytes.count {
            let length = min(bytes.count - offset, Int(UInt32.max))
            result = crc32(result, base.assumingMemoryBound(to: UInt8.self) + offset, UInt32(length))
            offset += length
        }
        return UInt32(result)
    }
}
