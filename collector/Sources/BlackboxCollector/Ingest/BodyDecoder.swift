import BlackboxCompression
import Foundation

/// Decodes a body sent with a `Content-Encoding`, piece by piece as it arrives (`BodyReceiver`).
protocol BodyDecoder: AnyObject {
    /// Decodes `input`, handing the output to `output` piece by piece (`output` may throw to stop).
    func decode(_ input: UnsafeRawBufferPointer, output: (ArraySlice<UInt8>) throws -> Void) throws
    /// Whether the encoded stream has ended properly (a truncated one has not).
    var isComplete: Bool { get }
}

extension Optional where Wrapped == any BodyDecoder {
    /// Hands `bytes` to `keep` as they are (no decoder) or decoded, piece by piece.
    func pass(_ bytes: UnsafeRawBufferPointer, to keep: (UnsafeRawBufferPointer) throws -> Void) throws {
        if let decoder = self {
            try decoder.decode(bytes) { piece in try piece.withUnsafeBytes(keep) }
        } else {
            try keep(bytes)
        }
    }
}

struct BodyDecodingFailure: Error, CustomStringConvertible {
    var description: String
}

/// The encodings an ingest route accepts, by their `Content-Encoding` name.
enum ContentCoding: String, Sendable {
    case identity, gzip, deflate, br

    /// Nil for no header; `unsupportedEncoding` for a name outside `accepted`.
    static func of(_ header: String?, accepted: [ContentCoding]) throws(APIError) -> ContentCoding? {
        guard let header, !header.isEmpty else { return nil }
        let name = header.trimmingCharacters(in: .whitespaces).lowercased()
        guard let coding = ContentCoding(rawValue: name == "x-gzip" ? "gzip" : name), accepted.contains(coding)
        else {
            throw .unsupportedEncoding(header, accepted: accepted.map(\.rawValue))
        }
        return coding
    }

    /// A fresh decoder, nil for `identity`; one that cannot be made is the upload's `corruptEncoding`.
    func makeDecoder() throws(APIError) -> (any BodyDecoder)? {
        do {
            switch self {
            case .identity: return nil
            // zlib's inflate reads gzip and zlib-wrapped deflate (what HTTP's `deflate` means) alike.
            case .gzip, .deflate: return try ZlibBodyDecoder()
            case .br: return try BrotliBodyDecoder()
            }
        } catch {
            throw .corruptEncoding("\(error)")
        }
    }
}

final class ZlibBodyDecoder: BodyDecoder {
    private let inflater: GzipInflater

    init() throws {
        do {
            inflater = try GzipInflater()
        } catch {
            throw BodyDecodingFailure(description: error.description)
        }
    }

    func decode(_ input: UnsafeRawBufferPointer, output: (ArraySlice<UInt8>) throws -> Void) throws {
        do {
            try inflater.feed(input, output: output)
        } catch let failure as GzipData.Failure {
            throw BodyDecodingFailure(description: failure.description)
        }
    }

    var isComplete: Bool { inflater.atMemberEnd }
}
