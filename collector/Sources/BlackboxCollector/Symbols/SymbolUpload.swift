import BlackboxSymbols
import Crypto
import Foundation
import Hummingbird
import Logging
import NIOPosix

/// `PUT /api/v1/symbols/<build-id>?name=<file name>[&replace=1]`: receives one symbol file (a
/// separate debug file, a binary or a shared library), gzip-compressed on the wire or not, checks that
/// it is an ELF file with that build-id and something to symbolicate with, and stores it
/// content-addressed. A repeat of the same bytes answers 200 with the stored record and stores nothing.
///
/// Every check happens before anything is stored: the body is inflated into a temporary file under
/// size, ratio, rate, free-space and time limits and the project's quota; the file's own build-id note
/// must equal the one in the path. The name is kept for people and never used as a path.
///
/// The first file of a build-id wins: build-ids are written by whoever builds the file, so a later,
/// different file with the same contents (debug info, code) would let any symbols key replace what
/// debuginfod serves and what names the project's frames. It is refused (409) unless the admin token
/// sends `replace=1`, which deletes the earlier one.
struct SymbolUpload: Sendable {
    let index: any SymbolIndex & UsageStore
    let blobs: any BlobStorage
    let limits: IngestLimits
    /// Called after a file with debug info was stored: reports waiting for its build-id are queued.
    let lateSymbols: @Sendable (_ projectID: Int64, _ buildID: String) async throws -> Void
    let metrics: CollectorMetrics
    let inFlight = UploadSlots()
    let logger = Logger(label: "collector.symbols")

    struct Acknowledgement: Encodable {
        var file: SymbolFile
        var duplicate: Bool
        /// Files of the build-id this upload replaced (`replace=1`).
        var replaced: [SymbolFile]
    }

    func receive(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        do {
            let (acknowledgement, created) = try await store(request, context: context)
            let record = acknowledgement.file
            logger.info("stored symbol file \(record.fileName) for build-id \(record.buildID): \(record.size) bytes")
            for old in acknowledgement.replaced {
                logger.notice("symbol file \(old.fileName) (sha256 \(old.sha256)) of build-id \(old.buildID) replaced")
            }
            return try JSONResponse.make(acknowledgement, status: created ? .created : .ok)
        } catch let refusal as APIError {
            logger.notice("symbol upload refused: \(refusal)")
            metrics.symbolUploadRejected(reason: refusal.code)
            throw refusal
        }
    }

    private func store(_ request: Request, context: AuthenticatedContext) async throws -> (Acknowledgement, Bool) {
        let claimed = context.parameters.get("buildID") ?? ""
        guard ELFBuildID.isValid(claimed) else { throw APIError.invalidBuildID(claimed) }
        guard let name = request.uri.queryParameters.get("name"), Self.isAcceptable(name: name) else {
            throw APIError.invalidFileName()
        }
        let replace = request.uri.queryParameters.get("replace") == "1"
        if replace, context.key.kind != .admin { throw APIError.forbidden() }
        let compressed = try Self.isGzip(request)
        return try await admitted(
            project: context.scope.projectID, declaredLength: request.headers[.contentLength].flatMap(Int.init)
        ) { room in
            let temporary = try blobs.makeTemporaryFile()
            defer { unlink(temporary.path) }  // gone already once committed, unless kept as a standby
            let body = try await receiveBody(request, compressed: compressed, room: room, into: temporary)
            return try await store(
                body, at: temporary.path, claimedBuildID: claimed, name: name, replace: replace, in: context.scope)
        }
    }

    /// Runs `upload` with a symbol upload slot of the project, once its quota and the disk have room
    /// (what is left of the quota is handed to `upload`). Every way a symbol file arrives starts here.
    func admitted<Result>(
        project: Int64, declaredLength: Int?, _ upload: (_ room: Int64) async throws -> Result
    ) async throws -> Result {
        do {
            try inFlight.enter(
                project: project, limit: limits.maxConcurrentSymbolUploads,
                perProject: limits.maxConcurrentSymbolUploadsPerProject)
        } catch {
            throw APIError.uploadSlots(
                error, limit: limits.maxConcurrentSymbolUploads, perProject: limits.maxConcurrentSymbolUploadsPerProject
            )
        }
        defer { inFlight.leave(project: project) }
        if let length = declaredLength, length > limits.maxSymbolFileBytes {
            throw APIError.bodyTooLarge(limit: limits.maxSymbolFileBytes)
        }
        if let available = blobs.availableBytes(),
            available < limits.minFreeBytes + Int64(declaredLength ?? 0)
        {
            throw APIError.insufficientStorage(available: available)
        }
        let usage = try await index.symbolUsage(projectID: project)
        guard usage.files < limits.maxSymbolFilesPerProject else {
            throw APIError.quotaExceeded(
                "\(usage.files) symbol files stored (`maxSymbolFilesPerProject`); delete unused ones")
        }
        let room = limits.maxSymbolBytesPerProject - usage.bytes
        guard room > 0 else { throw Self.bytesQuota(limits) }
        return try await upload(room)
    }

    /// Checks a received file (an ELF file with something to symbolicate with; its own build-id note,
    /// which must equal `claimedBuildID` when one is claimed), then stores it: the first file of a
    /// build-id wins unless `replace`. The temporary file is moved into the store.
    func store(
        _ body: ReceivedBody, at path: String, claimedBuildID: String?, name: String, replace: Bool,
        in scope: ProjectScope
    ) async throws -> (Acknowledgement, Bool) {
        guard body.size > 0 else { throw APIError.emptyBody() }
        // Reading the file and the fsyncs of the commit block: off the async executor, which serves
        // every other request (/health measured over a second behind them under load).
        let contents = try await NIOThreadPool.singleton.runIfActive { try Contents(path: path) }
        guard let buildID = contents.buildID, ELFBuildID.isValid(buildID) else {
            throw APIError.buildIDMismatch(claimed: claimedBuildID ?? "any", found: contents.buildID)
        }
        if let claimedBuildID, buildID != claimedBuildID {
            throw APIError.buildIDMismatch(claimed: claimedBuildID, found: buildID)
        }

        let existing = try await index.symbolFiles(buildIDs: [buildID], in: scope)
        var replacing: [SymbolFile] = []
        if !existing.contains(where: { $0.sha256 == body.sha256 }) {
            replacing = existing.filter {
                $0.hasDebugInfo == contents.hasDebugInfo && $0.hasCode == contents.hasCode
                    && $0.hasSources == contents.hasSources
            }
            if let first = replacing.first, !replace { throw APIError.symbolFileExists(first) }
        }
        do {
            try await blobs.commit(temporaryPath: path, sha256: body.sha256, size: body.size)
        } catch let error as S3Error {
            throw APIError.blobStoreUnavailable(error)
        }
        let blob = blobs.name(sha256: body.sha256)
        let (stored, created) = try await index.addSymbolFile(
            NewSymbolFile(
                projectID: scope.projectID, buildID: buildID, fileName: name, size: body.size,
                sha256: body.sha256, sha1: body.sha1, blob: blob, hasDebugInfo: contents.hasDebugInfo,
                hasCode: contents.hasCode, hasSources: contents.hasSources, uploadedAt: Date()))
        await blobs.releaseStandby(temporaryPath: path, name: blob)
        // Only once the new file is stored: a failure before leaves the old one in place.
        var replaced: [SymbolFile] = []
        let removal = SymbolFileRemoval(index: index, blobs: blobs)
        for file in replacing {
            replaced += try await removal.remove(buildID: buildID, sha256: file.sha256, in: scope)
        }
        if contents.hasDebugInfo { try await lateSymbols(scope.projectID, buildID) }
        return (Acknowledgement(file: stored, duplicate: !created, replaced: replaced), created)
    }

    /// What a received file holds for symbolication: an ELF file's debug info, symbol table or code,
    /// or a source bundle's sources.
    struct Contents {
        var buildID: String?
        var hasDebugInfo = false
        var hasCode = false
        var hasSources = false

        init(path: String) throws(APIError) {
            if SourceBundle.looksLikeOne(path: path) {
                let bundle: SourceBundle
                do {
                    bundle = try SourceBundle(path: path)
                } catch {
                    throw .notSourceBundle(error)
                }
                guard bundle.sourceCount > 0 else { throw .notSourceBundle(.notABundle("it names no source file")) }
                buildID = bundle.buildID
                hasSources = true
                return
            }
            guard let elf = ELFSymbolFile(path: path) else { throw .notELF() }
            guard elf.hasDebugInfo || elf.hasSymbolTable || elf.hasCode else { throw .noSymbols() }
            buildID = elf.buildID
            hasDebugInfo = elf.hasDebugInfo
            hasCode = elf.hasCode
        }
    }

    private static func bytesQuota(_ limits: IngestLimits) -> APIError {
        .quotaExceeded(
            "\(limits.maxSymbolBytesPerProject) bytes of symbol files stored (`maxSymbolBytesPerProject`); delete unused ones"
        )
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
        /// sentry-cli's name for a file.
        var sha1: String
        /// As stored (inflated).
        var size: Int64
    }

    /// Writes the body (inflated when gzip) to the file, hashing what is written. Stops at the size
    /// limit, at the project's `room` left in its quota, at the compression-ratio limit (checked once
    /// 1 MiB is inflated, as for bundles), when the disk reaches `minFreeBytes` (checked every
    /// 64 MiB written: a chunked or gzip body declares no size), below the minimum rate and at the
    /// upload deadline.
    private func receiveBody(
        _ request: Request, compressed: Bool, room: Int64, into file: TemporaryBlobFile
    ) async throws -> ReceivedBody {
        defer { close(file.descriptor) }
        var hasher = SHA256()
        var sha1 = Insecure.SHA1()
        var received = 0
        var written = 0
        let limit = limits.maxSymbolFileBytes
        let inflater: (any BodyDecoder)? = compressed ? try ZlibBodyDecoder() : nil
        let started = ContinuousClock.now
        let deadline = started + limits.maxSymbolUploadDuration
        var checkedSpaceAt = 0
        func keep(_ bytes: UnsafeRawBufferPointer) throws {
            written += bytes.count
            if written > limit {
                throw compressed ? APIError.totalTooLarge(limit: limit) : APIError.bodyTooLarge(limit: limit)
            }
            if Int64(written) > room { throw Self.bytesQuota(limits) }
            if written - checkedSpaceAt >= 64 << 20 {
                checkedSpaceAt = written
                if let available = blobs.availableBytes(), available < limits.minFreeBytes {
                    throw APIError.insufficientStorage(available: available)
                }
            }
            if compressed,
                CompressionRatio.exceeds(inflated: written, compressed: received, limit: limits.maxCompressionRatio)
            {
                throw APIError.compressionRatio(limit: limits.maxCompressionRatio, of: "the file")
            }
            hasher.update(bufferPointer: bytes)
            sha1.update(bufferPointer: bytes)
            try file.write(bytes)
        }
        do {
            for try await buffer in request.body {
                received += buffer.readableBytes
                if received > limit { throw APIError.bodyTooLarge(limit: limit) }
                let now = ContinuousClock.now
                if now > deadline { throw APIError.uploadTooSlow(limit: limits.maxSymbolUploadDuration) }
                let elapsed = now - started
                if elapsed > limits.idleTimeout,
                    Double(received) < Double(limits.minSymbolUploadBytesPerSecond) * Double(elapsed.components.seconds)
                {
                    throw APIError.slowerThan(bytesPerSecond: limits.minSymbolUploadBytesPerSecond)
                }
                try buffer.withUnsafeReadableBytes { try inflater.pass($0, to: keep) }
            }
        } catch let refusal as APIError {
            throw refusal
        } catch let failure as BodyDecodingFailure {
            throw APIError.notGzip(failure.description)
        } catch let failure as StorageError {
            throw failure
        } catch {
            throw APIError.bodyIncomplete("\(error)")
        }
        if let inflater, received > 0, !inflater.isComplete {
            throw APIError.notGzip("it ends before the gzip trailer")
        }
        return ReceivedBody(
            sha256: hasher.finalize().lowercaseHex, sha1: sha1.finalize().lowercaseHex, size: Int64(written))
    }
}
