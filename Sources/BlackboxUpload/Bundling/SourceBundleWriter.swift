#if Upload
    import Foundation
    import ZIPFoundation

    /// Writes a source bundle: the source files a build's debug info names, for the collector's source
    /// context (`blackbox symbols upload --sources`). The layout is sentry-cli's (`difutil
    /// bundle-sources`; symbolic's `SourceBundleWriter`): `manifest.json` with `{"files": {"files/<path>":
    /// {"type": "source", "path": "<absolute path>"}}, "code_id": "<build-id>", "object_name", "arch"}`
    /// and each file under `files/`, so the collector reads one format from both. Without its 8-byte
    /// `SYSB` header: ZIPFoundation writes a zip from offset 0, and a header before it would move every
    /// offset the zip records (the collector accepts both).
    ///
    /// The same files give the same bytes (sorted, a fixed date), so a second upload of a build's
    /// sources is a duplicate the collector recognizes.
    public enum SourceBundleWriter {
        public struct Written: Sendable, Equatable {
            public var files: Int
            /// Named by the debug info but not bundled: missing, not a regular file, or past a limit.
            public var skipped: Int
        }

        /// A file larger than this is no source worth showing (a generated table): left out.
        public static let maxFileBytes = 1 << 20
        /// All files of one bundle; the rest are left out.
        public static let maxTotalBytes = 256 << 20

        /// Writes the bundle of the `sources` that exist to `path` (replaced if there).
        public static func write(
            sources: [String], buildID: String, objectName: String, architecture: String, to path: String
        ) throws -> Written {
            unlink(path)
            let archive = try Archive(url: URL(fileURLWithPath: path), accessMode: .create)
            var manifestFiles: [String: [String: String]] = [:]
            var total = 0
            var skipped = 0
            let date = Date(timeIntervalSince1970: 315_532_800)  // 1980-01-01, the zip format's first day
            for source in Set(sources).sorted() {
                var status = stat()
                guard stat(source, &status) == 0, status.st_mode & S_IFMT == S_IFREG,
                    Int(status.st_size) <= maxFileBytes, total + Int(status.st_size) <= maxTotalBytes,
                    let contents = FileManager.default.contents(atPath: source), contents.count <= maxFileBytes
                else {
                    skipped += 1
                    continue
                }
                total += contents.count
                let entry = entryName(source)
                try archive.addEntry(
                    with: entry, type: .file, uncompressedSize: Int64(contents.count), modificationDate: date,
                    permissions: 0o644, compressionMethod: .deflate,
                    provider: { position, size in contents.subdata(in: Int(position)..<Int(position) + size) })
                manifestFiles[entry] = ["type": "source", "path": source]
            }
            let manifest: [String: Any] = [
                "files": manifestFiles, "code_id": buildID, "object_name": objectName, "arch": architecture,
            ]
            let json = try JSONSerialization.data(withJSONObject: manifest, options: [.sortedKeys])
            try archive.addEntry(
                with: "manifest.json", type: .file, uncompressedSize: Int64(json.count), modificationDate: date,
                permissions: 0o644, compressionMethod: .deflate,
                provider: { position, size in json.subdata(in: Int(position)..<Int(position) + size) })
            return Written(files: manifestFiles.count, skipped: skipped)
        }

        /// `files/` and the path with its separators folded, as symbolic names them.
        static func entryName(_ path: String) -> String {
            "files/" + path.split(separator: "/", omittingEmptySubsequences: true).joined(separator: "/")
        }
    }
#endif
