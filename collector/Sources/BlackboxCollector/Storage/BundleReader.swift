import Blackbox
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
        let archive: Archive
        do {
            archive = try Archive(url: URL(fileURLWithPath: blobs.path(of: blob)), accessMode: .read)
        } catch {
            throw Failure.unreadable(blob)
        }
        guard let entry = archive[path] else { throw Failure.missing(path) }
        var data = Data()
        _ = try archive.extract(entry) { chunk in
            if data.count + chunk.count > maxBytes { throw Failure.tooLarge(path) }
            data.append(chunk)
        }
        return data
    }

    /// The file's lines (gunzipped when it is a `.gz` archive), each cut at `maxLineBytes`. Split on
    /// bytes, not Characters: grapheme-aware splitting of megabytes of text costs far more than the
    /// rest of indexing together.
    func lines(of path: String, inBlob blob: String, maxLineBytes: Int = 8 << 10) throws -> [String] {
        var bytes = try contents(of: path, inBlob: blob)
        if path.hasSuffix(".gz") || bytes.starts(with: [0x1F, 0x8B]) {
            bytes = Data(try GzipData.decompress(Array(bytes), limit: maxBytes))
        }
        var lines = bytes.split(separator: 0x0A, omittingEmptySubsequences: false).map { line in
            String(decoding: line.prefix(maxLineBytes), as: UTF8.self)
        }
        if lines.last?.isEmpty == true { lines.removeLast() }
        return lines
    }
}
