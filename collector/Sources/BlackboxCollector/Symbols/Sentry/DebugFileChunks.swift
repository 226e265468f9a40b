import Crypto
import Foundation
import Hummingbird
import NIOCore

/// `POST /api/0/organizations/<org>/chunk-upload/`: sentry-cli's chunks, a multipart form whose parts
/// (`file`, or `file_gzip` when gzip-compressed) are named by the sha1 of their bytes. Each part is
/// inflated into a temporary file as it arrives (at most one chunk's size), checked against its
/// name and kept in the `ChunkStore`; a part that fails a check refuses the request. The form is read
/// as it streams in (`MultipartReader`), so a request never sits in memory whole. A request holds at most
/// the `chunksPerRequest` it was told (`SentryDebugFiles.settings`), and a `file_gzip` part inflates
/// within the compression ratio every compressed input here is held to.
struct DebugFileChunks: Sendable {
    let chunks: ChunkStore
    let blobs: any BlobStorage
    /// Bytes of one chunk, as advertised (`SentryDebugFiles.settings`).
    let chunkBytes: Int
    /// Bytes of one request on the wire.
    let maxRequestBytes: Int
    let chunksPerRequest: Int
    let maxCompressionRatio: Int

    func receive(_ request: Request, project: Int64) async throws {
        let form = try form(contentType: request.headers[.contentType], project: project)
        defer { form.discard() }
        do {
            for try await buffer in request.body { try form.feed(buffer) }
        } catch let refusal as APIError {
            throw refusal
        } catch {
            throw APIError.invalidForm("the form cannot be read: \(error)")
        }
        try form.finish()
    }

    /// The reader of one request's form: fed its body's buffers as they arrive, then finished.
    func form(contentType: String?, project: Int64) throws -> ChunkForm {
        guard let contentType, let boundary = Self.boundary(of: contentType) else {
            throw APIError.invalidForm("send multipart/form-data with a boundary")
        }
        return ChunkForm(
            boundary: boundary, maxRequestBytes: maxRequestBytes,
            part: PartReader(
                chunks: chunks, blobs: blobs, maxBytes: chunkBytes, maxParts: chunksPerRequest,
                maxCompressionRatio: maxCompressionRatio, project: project))
    }

    /// `multipart/form-data; boundary=----abc` → `----abc` (1-70 characters, RFC 2046).
    static func boundary(of contentType: String) -> String? {
        let fields = contentType.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }
        guard fields.first?.lowercased() == "multipart/form-data" else { return nil }
        for field in fields.dropFirst() where field.lowercased().hasPrefix("boundary=") {
            var value = field.dropFirst("boundary=".count)
            if value.hasPrefix("\""), value.hasSuffix("\""), value.count >= 2 { value = value.dropFirst().dropLast() }
            return (1...70).contains(value.count) ? String(value) : nil
        }
        return nil
    }
}

/// One request's form, read as its buffers arrive: the `MultipartReader` hands each part to the
/// `PartReader`. Apart from the request so that a test can feed it bytes (`IngestFuzzTests`). Not
/// Sendable: it lives within one request.
final class ChunkForm {
    private let parser: MultipartReader
    private let part: PartReader
    private let maxRequestBytes: Int
    private var received = 0

    fileprivate init(boundary: String, maxRequestBytes: Int, part: PartReader) {
        self.parser = MultipartReader(boundary: boundary)
        self.part = part
        self.maxRequestBytes = maxRequestBytes
        parser.onHeader = { name, value in part.header(name, value) }
        parser.onBody = { bytes in part.body(bytes) }
        parser.onPartComplete = { part.complete() }
    }

    func feed(_ buffer: ByteBuffer) throws {
        received += buffer.readableBytes
        if received > maxRequestBytes { throw APIError.bodyTooLarge(limit: maxRequestBytes) }
        do {
            try parser.execute(buffer.readableBytesView)
        } catch {
            throw APIError.invalidForm("the form cannot be read: \(error)")
        }
        if let failure = part.failure { throw failure }
    }

    /// The form has ended: it must be whole and have stored a chunk.
    func finish() throws {
        guard parser.isComplete else { throw APIError.invalidForm("the form ends before its closing boundary") }
        guard part.stored > 0 else { throw APIError.invalidForm("no file part") }
    }

    /// Removes the part being read, if any (what a refused or finished request leaves).
    func discard() { part.discard() }
}

/// One form part at a time, as the parser hands it over. Not Sendable: it lives within one request.
private final class PartReader {
    let chunks: ChunkStore
    let blobs: any BlobStorage
    let maxBytes: Int
    let maxParts: Int
    let maxCompressionRatio: Int
    let project: Int64
    private(set) var failure: APIError?
    private(set) var stored = 0
    private var parts = 0

    private var disposition = ""
    private var file: TemporaryBlobFile?
    private var inflater: (any BodyDecoder)?
    private var hasher = Insecure.SHA1()
    private var size = 0
    private var received = 0

    init(
        chunks: ChunkStore, blobs: any BlobStorage, maxBytes: Int, maxParts: Int, maxCompressionRatio: Int,
        project: Int64
    ) {
        self.chunks = chunks
        self.blobs = blobs
        self.maxBytes = maxBytes
        self.maxParts = maxParts
        self.maxCompressionRatio = maxCompressionRatio
        self.project = project
    }

    func header(_ name: String, _ value: String) {
        if name.lowercased() == "content-disposition" { disposition = value }
    }

    func body(_ bytes: ArraySlice<UInt8>) {
        guard failure == nil else { return }
        do {
            if file == nil { try begin() }
            received += bytes.count
            try bytes.withUnsafeBytes { try inflater.pass($0, to: keep) }
        } catch let refusal as APIError {
            failure = refusal
        } catch {
            failure = .invalidForm("a chunk cannot be read: \(error)")
        }
    }

    func complete() {
        defer { reset() }
        guard failure == nil else { return }
        do {
            if file == nil { try begin() }  // an empty part
            guard let file, let name = Self.parameter("filename", of: disposition) else { return }
            if inflater?.isComplete == false { throw APIError.notGzip("a chunk ends before its gzip trailer") }
            let sha1 = hasher.finalize().lowercaseHex
            guard sha1 == name.lowercased() else {
                throw APIError.invalidForm("the chunk named \(name.prefix(64)) has the sha1 \(sha1)")
            }
            close(file.descriptor)
            self.file = nil
            do {
                try chunks.keep(temporaryPath: file.path, sha1: sha1, size: Int64(size), project: project)
            } catch {
                unlink(file.path)
                switch error {
                case ChunkStore.Refusal.full(let limit):
                    throw APIError.quotaExceeded("\(limit) bytes of chunks waiting to be assembled")
                case ChunkStore.Refusal.tooMany(let limit):
                    throw APIError.quotaExceeded("\(limit) chunks waiting to be assembled")
                default: throw error
                }
            }
            stored += 1
        } catch let refusal as APIError {
            failure = refusal
        } catch {
            failure = .invalidForm("a chunk cannot be kept: \(error)")
        }
    }

    func discard() { reset() }

    private func begin() throws {
        let field = Self.parameter("name", of: disposition)
        guard field == "file" || field == "file_gzip",
            let name = Self.parameter("filename", of: disposition), name.count == 40, name.allSatisfy(\.isHexDigit)
        else { throw APIError.invalidForm("parts must be file or file_gzip, named by their sha1") }
        parts += 1
        guard parts <= maxParts else { throw APIError.invalidForm("at most \(maxParts) chunks per request") }
        inflater = field == "file_gzip" ? try ZlibBodyDecoder() : nil
        file = try blobs.makeTemporaryFile()
    }

    private func keep(_ bytes: UnsafeRawBufferPointer) throws {
        size += bytes.count
        guard size <= maxBytes else { throw APIError.entryTooLarge("chunk", limit: maxBytes) }
        if inflater != nil, CompressionRatio.exceeds(inflated: size, compressed: received, limit: maxCompressionRatio) {
            throw APIError.compressionRatio(limit: maxCompressionRatio, of: "a chunk")
        }
        hasher.update(bufferPointer: bytes)
        try file?.write(bytes)
    }

    private func reset() {
        if let file {
            close(file.descriptor)
            unlink(file.path)
        }
        file = nil
        inflater = nil
        hasher = Insecure.SHA1()
        size = 0
        received = 0
        disposition = ""
    }

    /// `form-data; name="file_gzip"; filename="826099…"` → the quoted parameter's value.
    static func parameter(_ key: String, of disposition: String) -> String? {
        for field in disposition.split(separator: ";").map({ $0.trimmingCharacters(in: .whitespaces) }) {
            guard field.hasPrefix(key + "=") else { continue }
            let value = field.dropFirst(key.count + 1)
            return value.hasPrefix("\"") && value.hasSuffix("\"") && value.count >= 2
                ? String(value.dropFirst().dropLast()) : String(value)
        }
        return nil
    }
}
