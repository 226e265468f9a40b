import CBlackboxZlib

/// Decompresses gzip (or zlib) data in memory, bounded: for reading `.gz` log archives that arrive
/// from elsewhere (the collector, the CLI), where a small file may claim to inflate to anything.
public enum GzipData {
    public struct Failure: Error, CustomStringConvertible {
        public var description: String
    }

    /// Concatenated gzip members (what `cat a.gz b.gz` makes) are decompressed one after the other.
    public static func decompress(_ input: [UInt8], limit: Int) throws(Failure) -> [UInt8] {
        var stream = z_stream()
        // 15 + 32: accept both gzip and zlib headers.
        guard inflateInit2_(&stream, 15 + 32, ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size)) == Z_OK else {
            throw Failure(description: "zlib cannot start")
        }
        defer { inflateEnd(&stream) }
        var output: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 << 10)
        var offset = 0
        var ended = false
        try input.withUnsafeBufferPointer { (source) throws(Failure) in
            guard let base = source.baseAddress else { return }
            while offset < source.count {
                stream.next_in = UnsafeMutablePointer(mutating: base + offset)
                stream.avail_in = UInt32(min(source.count - offset, Int(UInt32.max)))
                ended = false
                repeat {
                    let result = chunk.withUnsafeMutableBufferPointer { out in
                        stream.next_out = out.baseAddress
                        stream.avail_out = UInt32(out.count)
                        return inflate(&stream, Z_NO_FLUSH)
                    }
                    let produced = chunk.count - Int(stream.avail_out)
                    if output.count + produced > limit {
                        throw Failure(description: "inflates past the limit of \(limit) bytes")
                    }
                    output.append(contentsOf: chunk[0..<produced])
                    if result == Z_STREAM_END {
                        ended = true
                        break
                    }
                    guard result == Z_OK || result == Z_BUF_ERROR else {
                        throw Failure(description: "not valid gzip data (zlib error \(result))")
                    }
                } while stream.avail_out == 0
                let consumed = source.count - offset - Int(stream.avail_in)
                offset += consumed
                if ended {
                    if offset < source.count { inflateReset(&stream) }  // another member follows
                } else if consumed == 0 {
                    break
                }
            }
        }
        guard ended || input.isEmpty else { throw Failure(description: "truncated or invalid gzip data") }
        return output
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
