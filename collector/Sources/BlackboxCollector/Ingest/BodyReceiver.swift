import Crypto
import Foundation
import Hummingbird
import NIOCore

/// The second stage: the body, streamed to a temporary file beside the blobs and hashed as it goes,
/// within the size and time limits. What a format inspects, and what the group commit makes durable.
struct ReceivedBody: Sendable {
    /// The temporary file; the caller removes it unless it hands it on.
    var path: String
    var sha256: String
    var size: Int
    /// The whole body, when it is at most `BodyReceiver.inlineBytes`.
    var bytes: Data?
}

struct BodyReceiver: Sendable {
    let limits: IngestLimits
    let blobs: any BlobStorage

    /// Bodies up to this size are also kept in memory.
    static let inlineBytes = 64 << 10

    /// Writes the body to a new temporary file, hashing as it goes; stops at the size limit. A body
    /// of at most `inlineBytes` is gathered in memory and written with one call (a write per network
    /// chunk, then reading the file back to inspect it, cost more than the rest of a small upload);
    /// a larger one is streamed. On a refusal the file is gone.
    ///
    /// With `decoding` (a `Content-Encoding` the route accepts), what is hashed, kept and written is
    /// the decoded body, at most `maxDecodedBytes` of it and at most `maxCompressionRatio` times what
    /// arrived (checked past 1 MiB, as for bundles); the encoded body still counts against
    /// `maxBodyBytes`.
    ///
    /// With `firstLineCheck`, the (decoded) body's first line, or its first `maxFirstLineBytes` when no
    /// newline comes sooner, is handed to it as soon as it has arrived, before the rest is read: a
    /// body whose only credential is in its first line is refused there, not after the whole of it
    /// has taken the disk (security review 2026-11-27, finding 10).
    func receive(
        _ request: Request, decoding: (any BodyDecoder)? = nil, maxDecodedBytes: Int? = nil,
        firstLineCheck: ((Data) async throws -> Void)? = nil, maxFirstLineBytes: Int = 64 << 10
    ) async throws
        -> ReceivedBody
    {
        let file = try blobs.makeTemporaryFile()
        var received = false
        defer {
            close(file.descriptor)
            if !received { unlink(file.path) }
        }
        var hasher = SHA256()
        var size = 0
        var kept = 0
        let maxKept = maxDecodedBytes ?? limits.maxBodyBytes
        var gathered: ByteBuffer? = ByteBuffer()
        var firstLine = Data()
        var firstLineChecked = firstLineCheck == nil
        func keep(_ bytes: UnsafeRawBufferPointer) throws {
            if !firstLineChecked, firstLine.count <= maxFirstLineBytes {
                firstLine.append(contentsOf: bytes.prefix(maxFirstLineBytes + 1 - firstLine.count))
            }
            kept += bytes.count
            if kept > maxKept {
                throw decoding != nil ? APIError.decodedTooLarge(limit: maxKept) : APIError.bodyTooLarge(limit: maxKept)
            }
            if decoding != nil,
                CompressionRatio.exceeds(inflated: kept, compressed: size, limit: limits.maxCompressionRatio)
            {
                throw APIError.compressionRatio(limit: limits.maxCompressionRatio, of: "the decoded body")
            }
            hasher.update(bufferPointer: bytes)
            if gathered != nil, kept <= Self.inlineBytes {
                gathered?.writeBytes(bytes)
                return
            }
            if let early = gathered {
                try Self.write(early, to: file)
                gathered = nil
            }
            try file.write(bytes)
        }
        // A stalled body is closed by the connection's idle timeout; this bounds a trickling one.
        let deadline = ContinuousClock.now + limits.maxUploadDuration
        func receiveChunks() async throws {
            for try await buffer in request.body {
                size += buffer.readableBytes
                if size > limits.maxBodyBytes { throw APIError.bodyTooLarge(limit: limits.maxBodyBytes) }
                if ContinuousClock.now > deadline { throw APIError.uploadTooSlow(limit: limits.maxUploadDuration) }
                try buffer.withUnsafeReadableBytes { try decoding.pass($0, to: keep) }
                if !firstLineChecked, firstLine.contains(0x0A) || firstLine.count > maxFirstLineBytes {
                    try await checkFirstLine()
                }
            }
            if let decoding, !decoding.isComplete { throw APIError.corruptEncoding("the body ends before its end") }
            if !firstLineChecked { try await checkFirstLine() }
        }
        func checkFirstLine() async throws {
            firstLineChecked = true
            try await firstLineCheck?(firstLine.firstIndex(of: 0x0A).map { firstLine[..<$0] } ?? firstLine)
        }
        do {
            try await receiveChunks()
        } catch let rejection as APIError {
            throw rejection
        } catch let failure as BodyDecodingFailure {
            throw APIError.corruptEncoding(failure.description)
        } catch {
            // The client went away or stalled past the idle timeout: its fault, not a server error.
            throw APIError.bodyIncomplete("\(error)")
        }
        guard kept > 0 else { throw APIError.emptyBody() }
        let bytes = gathered.map { Data($0.readableBytesView) }
        if let gathered { try Self.write(gathered, to: file) }
        received = true
        return ReceivedBody(path: file.path, sha256: hasher.finalize().lowercaseHex, size: kept, bytes: bytes)
    }

    /// A body made here rather than received (the legacy Sentry `store/` endpoint's envelope).
    func receive(_ data: Data) throws -> ReceivedBody {
        let file = try blobs.makeTemporaryFile()
        defer { close(file.descriptor) }
        do {
            try data.withUnsafeBytes { try file.write($0) }
        } catch {
            unlink(file.path)
            throw error
        }
        return ReceivedBody(
            path: file.path, sha256: SHA256.hash(data: data).lowercaseHex, size: data.count,
            bytes: data.count <= Self.inlineBytes ? data : nil)
    }

    private static func write(_ buffer: ByteBuffer, to file: TemporaryBlobFile) throws {
        try buffer.withUnsafeReadableBytes { try file.write($0) }
    }
}
