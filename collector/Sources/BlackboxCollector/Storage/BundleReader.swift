import BlackboxCompression
import Foundation

/// Reads files back out of a stored bundle (downloads, the log viewer, the log indexer), in whichever
/// format stored it. The bundle was validated at ingest; limits still apply, since a blob is only as
/// trustworthy as the disk.
struct BundleReader {
    let blobs: any BlobStorage
    let maxBytes: Int
    /// Every format a stored blob may be in.
    let formats: [any BundleFormat]

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

    /// Runs `body` with the stored bundle `blob` readable as a local file (for as long as `body` runs).
    func withBundle<Result>(_ blob: String, _ body: (LocalBundle) async throws -> Result) async throws -> Result {
        let format = try format(of: blob)
        return try await blobs.withLocalFile(of: blob) { file in
            try await body(LocalBundle(file: file, format: format, maxBytes: maxBytes))
        }
    }

    /// The format that stored `blob`, by the blob's extension.
    private func format(of blob: String) throws -> any BundleFormat {
        let blobExtension = blob.split(separator: ".").last.map(String.init) ?? ""
        guard let format = formats.first(where: { type(of: $0).blobExtension == blobExtension }) else {
            throw Failure.unreadable(blob)
        }
        return format
    }
}

/// One stored bundle as a local file, read in its format. Its reads block: callers run them where
/// blocking is allowed (a thread pool), or for a bounded prefix only.
struct LocalBundle: Sendable {
    let file: String
    let format: any BundleFormat
    let maxBytes: Int

    func contents(of path: String) throws -> Data {
        guard let result = try format.contents(of: [path], fromBlobAt: file, maxBytes: maxBytes)[path] else {
            throw BundleReader.Failure.missing(path)
        }
        return try result.get()
    }

    /// The first `limit` bytes of the file (all of it when shorter), gunzipped first when `gunzip`,
    /// reading and inflating no further than that.
    func prefix(of path: String, limit: Int, gunzip: Bool = false) throws -> (data: Data, isComplete: Bool) {
        struct Enough: Error {}
        var data = Data()
        func take(_ piece: some Collection<UInt8>) throws {
            data.append(contentsOf: piece.prefix(limit - data.count))
            if data.count >= limit { throw Enough() }
        }
        let inflater = gunzip ? try GzipInflater() : nil
        do {
            try extract(path, chunkBytes: 64 << 10) { chunk in
                guard let inflater else { return try take(chunk) }
                try chunk.withUnsafeBytes { try inflater.feed($0, output: take) }
            }
            return (data, inflater?.atMemberEnd ?? true)
        } catch is Enough {
            return (data, false)
        }
    }

    /// Hands the file's bytes to `consumer` chunk by chunk, as they are inflated.
    func extract(_ path: String, chunkBytes: Int, consumer: (Data) throws -> Void) throws {
        try format.extract(path, fromBlobAt: file, chunkBytes: chunkBytes, maxBytes: maxBytes, consumer: consumer)
    }

    /// The file's lines (gunzipped when it is a `.gz` archive), each cut at `maxLineBytes`. Split on
    /// bytes with `memchr`, not Characters nor `Data.split`: grapheme-aware splitting of megabytes of
    /// text cost more than the rest of indexing together, and `Data.split` goes through a checked
    /// subscript per byte (profiled: 7 % of the collector's CPU under the upload benchmark).
    func lines(of path: String, maxLineBytes: Int = 8 << 10, maxLines: Int = .max) throws -> [String] {
        try lines(of: contents(of: path), path: path, maxLineBytes: maxLineBytes, maxLines: maxLines)
    }

    /// The lines of several files of the bundle, reading the blob once. A file that cannot be read
    /// gets its error.
    func lines(of paths: [String], maxLineBytes: Int = 8 << 10, maxLines: Int = .max) throws
        -> [String: Result<[String], any Error>]
    {
        let contents = try format.contents(of: Set(paths), fromBlobAt: file, maxBytes: maxBytes)
        var results: [String: Result<[String], any Error>] = [:]
        for (path, read) in contents {
            results[path] = Result {
                try lines(of: read.get(), path: path, maxLineBytes: maxLineBytes, maxLines: maxLines)
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
