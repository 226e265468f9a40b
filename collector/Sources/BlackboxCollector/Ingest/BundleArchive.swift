import BlackboxFormat
import Crypto
import Foundation
import ZIPFoundation

/// Builds bundle zips in memory (manifest, reports, logs): the example bundle, tests and the benchmark.
public enum BundleArchive {
    public static func make(
        app: CrashReport.App, host: String, reports: [CrashReport] = [], logs: [(name: String, contents: Data)] = []
    ) throws -> Data {
        var files: [(String, BundleManifest.Entry.Kind, Data)] = []
        for report in reports {
            files.append(
                (
                    "reports/\(report.kind.rawValue)-\(report.id.uuidString.lowercased()).json", .report,
                    report.encoded()
                ))
        }
        for log in logs { files.append(("logs/\(log.name)", .log, log.contents)) }
        let manifest = BundleManifest(
            app: app, host: host,
            entries: files.map { .init(path: $0.0, kind: $0.1, size: Int64($0.2.count), sha256: sha256($0.2)) })
        return try zip([("manifest.json", try manifest.encoded())] + files.map { ($0.0, $0.2) })
    }

    /// A zip of the given entries, deflated, except `.gz` files, which are stored as the uploader
    /// stores them.
    public static func zip(_ entries: [(name: String, contents: Data)]) throws -> Data {
        let archive = try Archive(data: Data(), accessMode: .create)
        for (name, data) in entries {
            try archive.addEntry(
                with: name, type: .file, uncompressedSize: Int64(data.count),
                compressionMethod: name.hasSuffix(".gz") ? .none : .deflate
            ) { position, size in data.subdata(in: Int(position)..<Int(position) + size) }
        }
        guard let data = archive.data else { throw StorageError.notFound("archive data") }
        return data
    }

    public static func sha256(_ data: Data) -> String {
        SHA256.hash(data: data).lowercaseHex
    }
}

extension Digest {
    /// Lowercase hex, the form sha256 values take everywhere in the collector and the bundle format
    /// (and the sha1 values sentry-cli names chunks and files by).
    var lowercaseHex: String { BlackboxFormat.lowercaseHex(self) }
}
