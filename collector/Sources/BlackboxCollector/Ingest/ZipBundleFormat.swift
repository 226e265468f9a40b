import Foundation
import ZIPFoundation

/// Blackbox's own upload: a zip with a manifest, reports and logs (`BundleInspector` checks it).
struct ZipBundleFormat: BundleFormat {
    let limits: IngestLimits
    /// Manifests and reports held in memory by inspections running now.
    let inspectionMemory: MemoryBudget?
    /// Where bodies too large to inspect on the request's task are inspected.
    var pool = InspectionPool.shared

    static var blobExtension: String { "zip" }

    /// Small bodies inflate up to this much on the calling task before moving to a thread.
    static let inlineInflateBytes = 1 << 20
    /// And hold up to this much of reports: each is decoded, cleaned and signed where it was
    /// inspected, and a 1.3 KB body's report of 160 KB of hostile names held this executor (shared
    /// by every request) for 0.4-2.4 s in a debug build (security review 2026-11-27, finding 1). An
    /// app's usual report (a few threads) is a few KB.
    static let inlineReportBytes = 16 << 10

    /// Inflating blocks a thread: a large bundle is inspected off the async executor, on the
    /// inspection pool (fair between projects). A small one is
    /// inspected right here, from memory (typically a fraction of a millisecond; two thread hops
    /// would cost more), but only up to `inlineInflateBytes` inflated: a small body can inflate 200×
    /// and hold a manifest whose decoding would stall every request on this executor, so past that
    /// the inspection starts again on the thread pool. The plan (grouping, the reports' stored JSON)
    /// is made where the inspection runs, so that neither a large report's encoding nor its
    /// signature is computed inside the write transaction.
    func inspect(_ body: ReceivedBody, for upload: UploadAdmission.Admitted, receivedAt: Date) async throws
        -> FormatInspection
    {
        let inspector = BundleInspector(limits: limits, memory: inspectionMemory, project: upload.key.projectID)
        let makePlan = { @Sendable (inspected: BundleInspector.Inspection) throws -> FormatInspection in
            FormatInspection(
                plan: try IngestPlan(
                    NewBundle(
                        projectID: upload.key.projectID, uploadID: upload.uploadID, sha256: body.sha256,
                        size: Int64(body.size), blob: ZipBundleFormat.blobName(sha256: body.sha256),
                        manifest: inspected.manifest, files: inspected.files, reports: inspected.reports,
                        receivedAt: receivedAt), bounds: IngestBounds(limits)))
        }
        if let bytes = body.bytes {
            if let inspection = try Self.inspectInline(bytes, with: inspector) { return try makePlan(inspection) }
            return try await pool.run(project: upload.key.projectID) {
                try makePlan(try inspector.inspect(bytes: bytes))
            }
        }
        let (path, size) = (body.path, body.size)
        return try await pool.run(project: upload.key.projectID) {
            try makePlan(try inspector.inspect(path: path, bodySize: size))
        }
    }

    /// The inspection, or nil when the body inflates past `inlineInflateBytes` or holds more than
    /// `inlineReportBytes` of reports.
    private static func inspectInline(_ bytes: Data, with inspector: BundleInspector) throws(APIError)
        -> BundleInspector.Inspection?
    {
        var inline = inspector
        inline.inlineWorkLimit = inlineInflateBytes
        inline.inlineReportLimit = inlineReportBytes
        do {
            return try inline.inspect(bytes: bytes)
        } catch {
            if error == .tooMuchWorkInline { return nil }
            throw error
        }
    }

    func extract(
        _ path: String, fromBlobAt blobFile: String, chunkBytes: Int, maxBytes: Int, consumer: (Data) throws -> Void
    ) throws {
        let archive = try Self.open(blobFile)
        guard let entry = archive[path] else { throw BundleReader.Failure.missing(path) }
        var size = 0
        _ = try archive.extract(entry, bufferSize: chunkBytes) { chunk in
            size += chunk.count
            if size > maxBytes { throw BundleReader.Failure.tooLarge(path) }
            try consumer(chunk)
        }
    }

    /// The archive's directory is read once: looking an entry up by name walks the whole directory, so
    /// one lookup per file made a bundle of 2,000 logs cost minutes.
    func contents(of paths: Set<String>, fromBlobAt blobFile: String, maxBytes: Int) throws
        -> [String: Result<Data, any Error>]
    {
        let archive = try Self.open(blobFile)
        var entries: [String: Entry] = [:]
        for entry in archive where paths.contains(entry.path) && entries[entry.path] == nil {
            entries[entry.path] = entry
        }
        var results: [String: Result<Data, any Error>] = [:]
        for path in paths {
            results[path] = Result {
                guard let entry = entries[path] else { throw BundleReader.Failure.missing(path) }
                var data = Data()
                _ = try archive.extract(entry) { chunk in
                    if data.count + chunk.count > maxBytes { throw BundleReader.Failure.tooLarge(path) }
                    data.append(chunk)
                }
                return data
            }
        }
        return results
    }

    private static func open(_ blobFile: String) throws -> Archive {
        do {
            return try Archive(url: URL(fileURLWithPath: blobFile), accessMode: .read)
        } catch {
            throw BundleReader.Failure.unreadable(blobFile)
        }
    }
}
