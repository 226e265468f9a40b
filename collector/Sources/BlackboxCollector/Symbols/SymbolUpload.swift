import BlackboxCompression
import BlackboxSymbols
import Crypto
import Foundation
import Hummingbird
import Logging

/// `PUT /api/v1/symbols/<build-id>?name=<file name>`: receives one symbol file (a separate debug
/// file, a binary or a shared library), gzip-compressed on the wire or not, checks that it is an ELF
/// file with that build-id and something to symbolicate with, and stores it content-addressed. A
/// repeat of the same bytes answers 200 with the stored record and stores nothing.
///
/// Every check happens before anything is stored: the body is inflated into a temporary file under
/// size, ratio and time limits; the file's own build-id note must equal the one in the path. The
/// name is kept for people and never used as a path.
struct SymbolUpload: Sendable {
    let index: any SymbolIndex
    let blobs: BlobStore
    let limits: IngestLimits
    /// Called after a file with debug info was stored: reports waiting for its build-id are queued.
    let lateSymbols: @Sendable (_ projectID: Int64, _ buildID: String) async throws -> Void
    let inFlight = UploadCounter()
    let logger = Logger(label: "collector.symbols")

    struct Acknowledgement: Encodable {
        var file: SymbolFile
        var duplicate: Bool
    }

    func receive(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        do {
            let (record, created) = try await store(request, context: context)
            logger.info("stored symbol file \(record.fileName) for build-id \(record.buildID): \(record.size) bytes")
            return try JSONResponse.make(
                Acknowledgement(file: record, duplicate: !created), status: created ? .created : .ok)
        } catch let refusal as APIError {
            logger.notice("symbol upload refused: \(refusal)")
            throw refusal
        }
    }

    private func store(_ request: Request, context: AuthenticatedContext) async throws -> (SymbolFile, Bool) {
        let claimed = context.parameters.get("buildID") ?? ""
        guard ELFBuildID.isValid(claimed) else { throw APIError.invalidBuildID(claimed) }
        guard let name = request.uri.queryParameters.get("name"), Self.isAcceptable(name: name) else {
            throw APIError.invalidFileName()
        }
        let compressed = try Self.isGzip(request)
        guard inFlight.enter(limit: limits.maxConcurrentSymbolUploads) else {
            throw APIError.tooManyUploads(limit: limits.maxConcurrentSymbolUploads)
        }
        defer { inFlight.leave() }
        let declaredLength = request.headers[.contentLength].flatMap(Int.init)
        if let length = declaredLength, length > limits.maxSymbolFileBytes {
            throw APIError.bodyTooLarge(limit: limits.maxSymbolFileBytes)
        }
        if let available = DiskSpace.available(at: blobs.root),
            available < limits.minFreeBytes + Int64(declaredLength ?? 0)
        {
            throw APIError.insufficientStorage(available: available)
        }

        let temporary = try blobs.makeTemporaryFile()
        defer { unlink(temporary.path) }  // gone already once committed, unless kept as a standby
        let body = try await receiveBody(request, compressed: compressed, into: temporary)
        guard body.size > 0 else { throw APIError.emptyBody() }
        guard let elf = ELFSymbolFile(path: temporary.path) else { throw APIError.notELF() }
        guard elf.buildID == claimed else { throw APIError.buildIDMismatch(claimed: claimed, found: elf.buildID) }
        guard elf.hasDebugInfo || elf.hasSymbolTable || elf.hasCode else { throw APIError.noSymbols() }

        let blob = try blobs.commit(temporaryPath: temporary.path, sha256: body.sha256, size: body.size)
        let stored = try await index.addSymbolFile(
            NewSymbolFile(
                projectID: context.scope.projectID, buildID: claimed, fileName: name, size: body.size,
                sha256: body.sha256, blob: blob, hasDebugInfo: elf.hasDebugInfo, hasCode: elf.hasCode,
                uploadedAt: Date()))
        blobs.releaseStandby(temporaryPath: temporary.path, sha256: body.sha256)
        if elf.hasDebugInfo { try await lateSymbols(context.scope.projectID, claimed) }
        return stored
    }

    /// A name for people: no path separators, control characters or NULs, not `.` or `..`.
    static func isAcceptable(name: String) -> Bool {
        !name.isEmpty && name.utf8.count <= 255 && name != "." && name != ".."
            && !name.unicodeScalars.contains { $0 == "/" || $0 == "\\" || $0.properties.generalCategory == .control }
    }

    private static func isGzip(_ request: Request) throws(APIError) -> Bool {
        guard let encoding = request.headers[.contentEncoding]?.trimmingCharacters(in: .whitespaces).lowercased()
        else { return false }
        switch encoding {
        case "gzip", "x-gzip": return true
        case "identity", "": return false
        default: throw .unsupportedEncoding(encoding)
        }
    }

    struct ReceivedBody {
        var sha256: String
        /// As stored (inflated).
        var size: Int64
    }

    /// Writes the body (inflated when gzip) to the file, hashing what is written. Stops at the size
    /// limit, at the compression-ratio limit (checked once 1 MiB is inflated, as for bundles) and at
    /// the upload deadline.
    private func receiveBody(_ request: Request, compressed: Bool, into file: BlobStore.TemporaryFile) async throws
        -> ReceivedBody
    {
        defer { close(file.descriptor) }
        var hasher = SHA256()
        var received = 0
        var written = 0
        let limit = limits.maxSymbolFileBytes
        let inflater = compressed ? try GzipInflater() : nil
        let deadline = ContinuousClock.now + limits.maxSymbolUploadDuration
        func keep(_ bytes: UnsafeRawBufferPointer) throws {
            written += bytes.count
            if written > limit {
                throw compressed ? APIError.totalTooLarge(limit: limit) : APIError.bodyTooLarge(limit: limit)
            }
            if compressed, written > 1 << 20, written / max(received, 1) > limits.maxCompressionRatio {
                throw APIError.compressionRatio(limit: limits.maxCompressionRatio)
            }
            hasher.update(bufferPointer: bytes)
            try file.write(bytes)
        }
        do {
            for try await buffer in request.body {
                received += buffer.readableBytes
                if received > limit { throw APIError.bodyTooLarge(limit: limit) }
                if ContinuousClock.now > deadline {
                    throw APIError.uploadTooSlow(limit: limits.maxSymbolUploadDuration)
                }
                try buffer.withUnsafeReadableBytes { bytes in
                    if let inflater {
                        try inflater.feed(bytes) { piece in try piece.withUnsafeBytes(keep) }
                    } else {
                        try keep(bytes)
                    }
                }
            }
        } catch let refusal as APIError {
            throw refusal
        } catch let failure as GzipData.Failure {
            throw APIError.notGzip(failure.description)
        } catch let failure as StorageError {
            throw failure
        } catch {
            throw APIError.bodyIncomplete("\(error)")
        }
        if let inflater, received > 0, !inflater.atMemberEnd {
            throw APIError.notGzip("it ends before the gzip trailer")
        }
        return ReceivedBody(sha256: hasher.finalize().lowercaseHex, size: Int64(written))
    }
}
