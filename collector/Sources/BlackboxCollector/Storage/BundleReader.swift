import BlackboxCompression
import Foundation
import ZIPFoundation

/// Reads one file back out of a stored bundle zip (downloads, the log viewer, the log indexer). The
/// zip was validated at ingest; limits still apply, since a blob is only as trustworthy as the disk.
struct BundleReader {
    let blobs: BlobStore
    let maxBytes: Int

    enum Failure: Error, CustomStringConvertible {
        case missing(String)
        case tooLarge(String)
        case unreadable(String)
        var description: String {
            switch self {
            case .missing(let what): "not in the stored bundle: \(what)"
            case .tooLarge(let what): "too large to read back: \(what)"
            case .unreadable(let what): "cannot read: \(what)"
            }
        }
    }

    func contents(of path: String, inBlob blob: String) throws -> Data {
        let archive = try open(blob)
        guard let entry = archive[path] else { throw Failure.missing(path) }
        return try contents(of: entry, in: archive)
    }

    private func open(_ blob: String) throws -> Archive {
        do {
            return try Archive(url: URL(fileURLWithPath: blobs.path(of: blob)), accessMode: .read)
        } catch {
            throw Failure.unreadable(blob)
        }
    }

    /// The first `limit` bytes of the file (all of it when shorter), gunzipped first when `gunzip`,
    /// reading and inflating no further than that.
    func prefix(of path: String, inBlob blob: String, limit: Int, gunzip: Bool = false) throws
        -> (data: Data, isComplete: Bool)
    {
        struct Enough: Error {}
        var data = Data()
        func take(_ piece: some Collection<UInt8>) throws {
            data.append(contentsOf: piece.prefix(limit - data.count))
            if data.count >= limit { throw Enough() }
        }
        let inflater = gunzip ? try GzipInflater() : nil
        do {
            try extract(path, inBlob: blob, chunkBytes: 64 << 10) { chunk in
                guard let inflater else { return try take(chunk) }
                try chunk.withUnsafeBytes { try inflater.feed($0, output: take) }
            }
            return (data, inflater?.atMemberEnd ?? true)
        } catch is Enough {
            return (data, false)
        }
    }

    /// Hands the file's bytes to `consumer` chunk by chunk, as they are inflated.
    func extract(_ path: String, inBlob blob: String, chunkBytes: Int, consumer: (Data) throws -> Void) throws {
        let archive = try open(blob)
        guard let entry = archive[path] else { throw Failure.missing(path) }
        var size = 0
        _ = try archive.extract(entry, bufferSize: chunkBytes) { chunk in
            size += chunk.count
            if size > maxBytes { throw Failure.tooLarge(path) }
            try consumer(chunk)
        }
    }

    private func contents(of entry: Entry, in archive: Archive) throws -> Data {
        let path = entry.path
        var data = Data()
        _ = try archive.extract(entry) { chunk in
            if data.count + chunk.count > maxBytes { throw Failure.tooLarge(path) }
            data.append(chunk)
        }
        return data
    }

    /// The file's lines (gunzipped when it is a `.gz` archive), each cut at `maxLineBytes`. Split on
    /// bytes with `memchr`, not Characters nor `Data.split`: grapheme-aware splitting of megabytes of
    /// text cost more than the rest of indexing together, and `Data.split` goes through a checked
    /// subscript per byte (profiled: 7 % of the collector's CPU under the upload benchmark).
    func lines(of path: String, inBlob blob: String, maxLineBytes: Int = 8 << 10, maxLines: Int = .max) throws
        -> [String]
    {
        try lines(of: contents(of: path, inBlob: blob), path: path, maxLineBytes: maxLineBytes, maxLines: maxLines)
    }

    /// The lines of several files of one bundle: the archive is opened and its directory read once
    /// (looking an entry up by name walks the whole directory, so one lookup per file made a bundle
    /// of 2,000 logs cost minutes). A file that cannot be read gets its error.
    func lines(of paths: [String], inBlob blob: String, maxLineBytes: Int = 8 << 10, maxLines: Int = .max)
        throws -> [String: Result<[String], any Error>]
    {
        let archive = try open(blob)
        let wanted = Set(paths)
        var entries: [String: Entry] = [:]
        for entry in archive where wanted.contains(entry.path) && entries[entry.path] == nil {
            entries[entry.path] = entry
        }
        var results: [String: Result<[String], any Error>] = [:]
        for path in wanted {
            results[path] = Result {
                guard let entry = entries[path] else { throw Failure.missing(path) }
                return try lines(
                    of: contents(of: entry, in: archive), path: path, maxLineBytes: maxLineBytes, maxLines: maxLines)
            }
        }
        return results
    }

    private func lines(of data: Data, path: String, maxLineBytes: Int, maxLines: Int) throws -> [String] {
        var bytes = data
        if path.hasSuffix(".gz") || bytes.starts(with: [0x1F, 0x8B]) {
            bytes = Data(try GzipData.decompress(Array(bytes), limit: maxBytes))
        }
        return bytes.withUnsafeBytes { Self.lines(in: $0, maxLineBytes: maxLineBytes, maxLines: maxLines) }
    }

    static func lines(in buffer: UnsafeRawBufferPointer, maxLineBytes: Int, maxLines: Int = .max) -> [String] {
        guard let base = buffer.baseAddress, !buffer.isEmpty else { return [] }
        var lines: [String] = []
        var start = 0
        while start < buffer.count && lines.count < maxLines {
            let end =
                memchr(base + start, 0x0A, buffer.count - start).map { base.distance(to: UnsafeRawPointer($0)) }
                ?? buffer.count
            let line = UnsafeRawBufferPointer(rebasing: buffer[start..<min(end, start + maxLineBytes)])
            lines.append(String(decoding: line, as: UTF8.self))
            start = end + 1
        }
        return lines
    }
}
