import BlackboxCompression
import BlackboxFormat
import Crypto
import Foundation
import ZIPFoundation

/// Validates an uploaded zip without trusting its headers, and reads what indexing needs.
///
/// - Entry names are checked (no absolute paths, `..`, backslashes, NUL) but never used as file
///   system paths: nothing is extracted to disk; the raw zip is stored by its hash.
/// - Sizes are the bytes actually inflated, counted while inflating, with limits per entry, in total,
///   and as a ratio to the body's size; inflation stops the moment a limit is passed, so a bomb costs
///   at most the limit in CPU and nothing in memory.
/// - Symlink entries and archives inside the archive are refused; every CRC-32 is checked (with
///   zlib's CRC: ZIPFoundation's own, on Linux, is a byte-at-a-time loop slower than inflating).
/// - With a `manifest.json`, every listed entry must be present with the listed size and sha256.
///   Without one (a plain zip from `zip` or Python's zipfile), every file is taken as a log.
struct BundleInspector {
    let limits: IngestLimits
    /// Shared by all uploads; nil: only the per-bundle limit applies (tests of single bundles).
    var memory: MemoryBudget? = nil
    /// Whose upload it is, for the memory budget's per-project share.
    var project: Int64 = 0
    /// When set, inspection stops with `APIError.tooMuchWorkInline` once this many bytes are
    /// inflated: the caller is on the async executor and moves the rest to a thread pool.
    var inlineWorkLimit: Int? = nil
    /// The same for the reports' bytes, whose decoding, cleaning and signature cost more per byte.
    var inlineReportLimit: Int? = nil

    struct Inspection {
        var manifest: BundleManifest?
        var files: [InspectedFile]
        var reports: [CrashReport]
    }

    private struct Consumed {
        var size = 0
        var hasher = SHA256()
        var kept = Data()
        var firstBytes = Data()
        var checksum: UInt32 = 0
        var lines = 0
    }

    /// Inspects an upload streamed to a file.
    func inspect(path: String, bodySize: Int) throws(APIError) -> Inspection {
        let archive: Archive
        do {
            archive = try Archive(url: URL(fileURLWithPath: path), accessMode: .read)
        } catch {
            throw Self.startsLikeZip(path) ? .corrupt("no readable central directory") : .notAZip()
        }
        return try inspect(archive, bodySize: bodySize)
    }

    /// Inspects an upload held in memory (a small one: no file to reopen and read back).
    func inspect(bytes: Data) throws(APIError) -> Inspection {
        let archive: Archive
        do {
            archive = try Archive(data: bytes, accessMode: .read)
        } catch {
            throw bytes.starts(with: [0x50, 0x4B]) ? .corrupt("no readable central directory") : .notAZip()
        }
        return try inspect(archive, bodySize: bytes.count)
    }

    private func inspect(_ archive: Archive, bodySize: Int) throws(APIError) -> Inspection {
        var held = 0
        defer { memory?.giveBack(held, project: project) }
        var entries: [Entry] = []
        for entry in archive {
            entries.append(entry)
            if entries.count > limits.maxEntries { throw .tooManyEntries(limit: limits.maxEntries) }
        }

        // A compressed log's real line count only matters when the bundle holds more logs than the
        // indexing budget has room for at the per-file cap; otherwise every log is indexed whatever
        // it holds, and inflating each at ingest (which cut the stored-.log.gz ingest rate of `make
        // bench-collector` to a third) would buy nothing.
        let possibleLogs = entries.count { $0.type == .file && !Self.isKept($0.path) }
        let countsCompressedLines =
            possibleLogs > limits.maxIndexedLinesPerBundle / max(limits.maxIndexedLinesPerFile, 1)
        var total = 0
        var inflatedTotal = 0
        var keptTotal = 0
        var files: [InspectedFile] = []
        var keptContents: [String: Data] = [:]
        var names = Set<String>()
        for entry in entries {
            let name = entry.path
            try Self.checkPath(name)
            // Two entries of one name: the manifest's checksum could vouch for one while another is read.
            guard names.insert(name).inserted else { throw .duplicateEntry(name) }
            switch entry.type {
            case .symlink: throw .symlink(name)
            case .directory: continue
            case .file: break
            }
            let keep = Self.isKept(name)
            let compressed = name.hasSuffix(".gz")
            var consumed = Consumed()
            var gzipLines =
                compressed && countsCompressedLines
                ? GzipLineCounter(maxLines: limits.maxIndexedLinesPerFile, maxBytes: limits.maxEntryBytes) : nil
            do {
                _ = try archive.extract(entry, bufferSize: Self.bufferSize(for: entry), skipCRC32: true) { chunk in
                    consumed.size += chunk.count
                    total += chunk.count
                    if let inlineWorkLimit, total > inlineWorkLimit { throw APIError.tooMuchWorkInline }
                    if consumed.firstBytes.count < 4 {
                        consumed.firstBytes.append(chunk.prefix(4 - consumed.firstBytes.count))
                    }
                    if consumed.size > limits.maxEntryBytes {
                        throw APIError.entryTooLarge(name, limit: limits.maxEntryBytes)
                    }
                    if total > limits.maxTotalBytes { throw APIError.totalTooLarge(limit: limits.maxTotalBytes) }
                    if CompressionRatio.exceeds(
                        inflated: total, compressed: bodySize, limit: limits.maxCompressionRatio)
                    {
                        throw APIError.compressionRatio(limit: limits.maxCompressionRatio)
                    }
                    if keep {
                        if consumed.kept.count + chunk.count > limits.maxReportBytes {
                            throw APIError.invalidReport(name, "larger than \(limits.maxReportBytes) bytes")
                        }
                        keptTotal += chunk.count
                        if let inlineReportLimit, keptTotal > inlineReportLimit { throw APIError.tooMuchWorkInline }
                        if keptTotal > limits.maxReportBytesPerBundle {
                            throw APIError.reportsTooLarge(limit: limits.maxReportBytesPerBundle)
                        }
                        if let memory {
                            try memory.take(chunk.count, project: project, for: name)
                            held += chunk.count
                        }
                        consumed.kept.append(chunk)
                    }
                    chunk.withUnsafeBytes { bytes in
                        consumed.hasher.update(bufferPointer: bytes)
                        consumed.checksum = ZlibCRC32.update(consumed.checksum, with: bytes)
                        if gzipLines != nil {
                            inflatedTotal += gzipLines?.feed(bytes) ?? 0
                        } else if !compressed {
                            consumed.lines += Self.countNewlines(bytes)
                        }
                    }
                    // Counting a compressed log's lines inflates it: inline work too.
                    if let inlineWorkLimit, total + inflatedTotal > inlineWorkLimit {
                        throw APIError.tooMuchWorkInline
                    }
                }
            } catch let rejection as APIError {
                throw rejection
            } catch {
                throw .corrupt("entry \"\(name.prefix(200))\": \(error)")
            }
            guard consumed.checksum == entry.checksum else {
                throw .corrupt("entry \"\(name.prefix(200))\": CRC-32 mismatch")
            }
            if consumed.firstBytes == Data([0x50, 0x4B, 0x03, 0x04]) { throw .nestedArchive(name) }
            let digest = consumed.hasher.finalize().lowercaseHex
            files.append(
                InspectedFile(
                    path: name, kind: .other, size: Int64(consumed.size), sha256: digest,
                    lineCount: gzipLines?.count ?? (compressed ? limits.maxIndexedLinesPerFile : consumed.lines + 1)))
            if keep { keptContents[name] = consumed.kept }
        }
        guard !files.isEmpty else { throw .noFiles() }
        return try classify(files, contents: keptContents)
    }

    /// The manifest and report contents: read whole and kept for decoding, never logs.
    private static func isKept(_ name: String) -> Bool {
        name == "manifest.json" || isReportContent(name)
    }

    static func countNewlines(_ bytes: UnsafeRawBufferPointer) -> Int {
        guard var cursor = bytes.baseAddress else { return 0 }
        let end = cursor + bytes.count
        var count = 0
        while cursor < end, let found = memchr(cursor, 0x0A, end - cursor) {
            count += 1
            cursor = UnsafeRawPointer(found) + 1
        }
        return count
    }

    private func classify(_ files: [InspectedFile], contents: [String: Data]) throws(APIError) -> Inspection {
        var files = files
        guard let manifestData = contents["manifest.json"] else {
            // A plain zip of logs.
            for index in files.indices { files[index].kind = .log }
            return Inspection(manifest: nil, files: files, reports: [])
        }
        let sanitizer = FieldSanitizer(maxFieldBytes: limits.maxFieldBytes)
        let manifest: BundleManifest
        do {
            manifest = try sanitizer.sanitized(
                try BundleManifest.decode(manifestData), raw: manifestData, decode: BundleManifest.decode)
        } catch {
            throw .invalidManifest("\(error)")
        }
        var reports: [CrashReport] = []
        let indexByPath = Dictionary(
            files.indices.map { (files[$0].path, $0) }, uniquingKeysWith: { first, _ in first })
        var listedPaths = Set<String>()
        for listed in manifest.entries {
            guard let index = indexByPath[listed.path] else {
                throw .manifestMismatch("manifest.json lists \"\(listed.path.prefix(200))\", which is not in the zip")
            }
            // Each entry is read and decoded once: a manifest listing one report thousands of times
            // would otherwise cost its size in memory and time for every listing.
            guard listedPaths.insert(listed.path).inserted else {
                throw .manifestMismatch("manifest.json lists \"\(listed.path.prefix(200))\" more than once")
            }
            guard files[index].size == listed.size, files[index].sha256 == listed.sha256.lowercased() else {
                throw .manifestMismatch(
                    "\"\(listed.path.prefix(200))\" does not match its size or sha256 in manifest.json")
            }
            switch listed.kind {
            case .log: files[index].kind = .log
            case .other: files[index].kind = .other
            case .report:
                files[index].kind = .report
                guard let data = contents[listed.path], listed.path.hasSuffix(".json") else {
                    throw .invalidReport(listed.path, "reports must be reports/<name>.json")
                }
                do {
                    reports.append(
                        try sanitizer.sanitized(try CrashReport.decode(data), raw: data, decode: CrashReport.decode))
                } catch {
                    throw .invalidReport(listed.path, "\(error)")
                }
            case .rawReport:
                files[index].kind = .other
                guard let data = contents[listed.path], listed.path.hasSuffix(".raw") else {
                    throw .invalidReport(listed.path, "raw reports must be reports/<name>.raw")
                }
                let tail = contents[String(listed.path.dropLast(".raw".count)) + ".tail.log"]
                let report = try Self.report(fromRaw: data, tail: tail, path: listed.path)
                do {
                    let encoded = report.encoded()
                    reports.append(try sanitizer.sanitized(report, raw: encoded, decode: CrashReport.decode))
                } catch {
                    throw .invalidReport(listed.path, "\(error)")
                }
            }
        }
        if let index = files.firstIndex(where: { $0.path == "manifest.json" }) { files[index].kind = .manifest }
        return Inspection(manifest: manifest, files: files, reports: reports)
    }

    /// Entries read into memory (within the report limits) besides the manifest: JSON reports, raw
    /// reports sent at crash time and the log lines sent with them.
    static func isReportContent(_ name: String) -> Bool {
        name.hasPrefix("reports/") && (name.hasSuffix(".json") || name.hasSuffix(".raw") || name.hasSuffix(".tail.log"))
    }

    /// How many of the log lines sent with a raw report the report keeps (the library's default).
    static let rawReportLogTailLines = 50

    /// The report a raw report sent at crash time stands for: assembled as the crashing machine's
    /// next launch would, but unnamed; the symbolication service names its frames from the symbol
    /// store afterwards, like any report stored without debug-info names.
    static func report(fromRaw data: Data, tail: Data?, path: String) throws(APIError) -> CrashReport {
        let raw: RawCrashReport
        do {
            raw = try RawCrashReport(bytes: Array(data))
        } catch {
            throw .invalidReport(path, "\(error)")
        }
        var report = CrashReportAssembler().assemble(raw)
        if let tail {
            let lines = String(decoding: tail, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: true)
            report.logTail = lines.suffix(rawReportLogTailLines).map(String.init)
        }
        CrashReportAssembler.finish(&report)
        report.notes.append("sent at crash time as a raw report; built by the collector")
        return report
    }

    /// ZIPFoundation allocates (and zeroes) buffers of this size for every entry: 256 KiB for a
    /// 20 KB log cost more than inflating it. The sizes come from the untrusted header, so they only
    /// choose a buffer size within bounds; the limits are enforced on the bytes actually inflated.
    static func bufferSize(for entry: Entry) -> Int {
        let declared = max(entry.uncompressedSize, entry.compressedSize)
        return Int(min(max(declared, 4 << 10), 256 << 10))
    }

    static func checkPath(_ name: String) throws(APIError) {
        let components = name.split(separator: "/", omittingEmptySubsequences: false)
        if name.isEmpty || name.hasPrefix("/") || name.contains("\\") || name.contains("\0")
            || components.contains("..") || (name.count >= 2 && name.dropFirst().first == ":")
        {
            throw .unsafePath(name)
        }
    }

    static func startsLikeZip(_ path: String) -> Bool {
        guard let handle = FileHandle(forReadingAtPath: path) else { return false }
        defer { try? handle.close() }
        return (try? handle.read(upToCount: 2)) == Data([0x50, 0x4B])
    }
}
