#if Upload
    import Blackbox
    import BlackboxFormat
    import BlackboxSystem
    import Crypto
    import Foundation
    import ZIPFoundation

    /// Writes bundles (docs/bundle.md): zips with `manifest.json`, each durable (fsync + rename) before
    /// it is returned, each at most `maxBundleBytes` of content so that a collector's body limit is met.
    public struct BundleWriter: Sendable {
        public var app: CrashReport.App
        public var host: String
        /// Content (before compression) per bundle; more items make more bundles. An item larger than
        /// this goes alone into a bundle of its own. Default 16 MiB (the collector accepts 64 MiB).
        public var maxBundleBytes: Int64 = 16 << 20
        /// Run counts for the manifest of the first bundle written (a bundle of its own when there are no
        /// items).
        public var sessions: [SessionSummary] = []

        public init(app: CrashReport.App, host: String) {
            self.app = app
            self.host = host
        }

        public struct Written: Sendable {
            public var path: String
            public var manifest: BundleManifest
            public var items: [BundleItem]
            /// Also the upload's `Upload-Id`.
            public var id: UUID { manifest.bundleID }
        }

        /// Writes `<directory>/<bundle-id>.zip` files for `items`, in order. `id` names the first bundle
        /// (a live log segment's id is derived from what it holds, so that cutting it again after a
        /// crash makes the same upload); the others get random ids.
        @discardableResult
        public func write(_ items: [BundleItem], into directory: String, id: UUID? = nil) throws(BundleError)
            -> [Written]
        {
            do {
                try FileManager.default.createDirectory(
                    atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            } catch {
                throw BundleError(
                    path: directory, reason: "cannot create the directory (\(error.localizedDescription))")
            }
            var written: [Written] = []
            var groups = partition(items)
            if groups.isEmpty && !sessions.isEmpty { groups = [[]] }
            for (index, group) in groups.enumerated() {
                written.append(
                    try writeOne(
                        group, sessions: index == 0 ? sessions : [], losses: [], into: directory,
                        id: index == 0 ? id ?? UUID() : UUID()))
            }
            return written
        }

        /// A bundle of `losses` alone (manifest format 4): kept apart from reports and logs, so that a
        /// collector too old for the format refuses these counts and nothing else.
        public func writeLosses(_ losses: [DeliveryLoss], into directory: String) throws(BundleError) -> Written {
            try writeOne([], sessions: [], losses: losses, into: directory, id: UUID())
        }

        func partition(_ items: [BundleItem]) -> [[BundleItem]] {
            var groups: [[BundleItem]] = []
            var current: [BundleItem] = []
            var size: Int64 = 0
            for item in items {
                if !current.isEmpty && size + item.size > maxBundleBytes {
                    groups.append(current)
                    current = []
                    size = 0
                }
                current.append(item)
                size += item.size
            }
            if !current.isEmpty { groups.append(current) }
            return groups
        }

        private func writeOne(
            _ items: [BundleItem], sessions: [SessionSummary], losses: [DeliveryLoss], into directory: String, id: UUID
        ) throws(BundleError) -> Written {
            let path = "\(directory)/\(id.uuidString.lowercased()).zip"
            let temporary = path + ".tmp"
            do {
                let entries = try writeZip(items, sessions: sessions, losses: losses, at: temporary, id: id)
                try DurableFile.commit(temporary, to: path)
                return Written(path: path, manifest: entries, items: items)
            } catch let error as BundleError {
                unlink(temporary)
                throw error
            } catch {
                unlink(temporary)
                throw BundleError(path: temporary, reason: "\(error)")
            }
        }

        private func writeZip(
            _ items: [BundleItem], sessions: [SessionSummary], losses: [DeliveryLoss], at path: String, id: UUID
        ) throws -> BundleManifest {
            let archive: Archive
            do {
                archive = try Archive(url: URL(fileURLWithPath: path), accessMode: .create)
            } catch {
                throw BundleError(path: path, reason: "cannot create (\(error))")
            }
            chmod(path, 0o600)  // bundles hold logs: private like them
            var entries: [BundleManifest.Entry] = []
            for item in items {
                entries.append(try add(item, to: archive))
            }
            let manifest = BundleManifest(
                bundleID: id, app: app, host: host, entries: entries, sessions: sessions, losses: losses)
            let json = try manifest.encoded()
            try archive.addEntry(
                with: "manifest.json", type: .file, uncompressedSize: Int64(json.count), compressionMethod: .deflate,
                provider: { position, size in json.subdata(in: Int(position)..<Int(position) + size) })
            return manifest
        }

        /// Streams the item's byte range into the zip, hashing what goes in. Already compressed files
        /// (`.gz`) are stored, not deflated again.
        private func add(_ item: BundleItem, to archive: Archive) throws -> BundleManifest.Entry {
            guard let file = FileHandle(forReadingAtPath: item.sourcePath) else {
                throw BundleError(path: item.sourcePath, reason: "cannot open (\(errnoDescription()))")
            }
            defer { try? file.close() }
            var hasher = SHA256()
            let method: CompressionMethod = item.sourcePath.hasSuffix(".gz") ? .none : .deflate
            try archive.addEntry(
                with: item.entryPath, type: .file, uncompressedSize: item.size, permissions: 0o600,
                compressionMethod: method,
                provider: { position, size in
                    try file.seek(toOffset: UInt64(item.range.lowerBound + position))
                    let data = try file.read(upToCount: size) ?? Data()
                    // The file shrank since the item was chosen: the manifest would lie.
                    guard data.count == size else {
                        throw BundleError(path: item.sourcePath, reason: "the file changed while it was being bundled")
                    }
                    hasher.update(data: data)
                    return data
                })
            return BundleManifest.Entry(
                path: item.entryPath, kind: item.kind, size: item.size, sha256: hasher.finalize().lowercaseHex)
        }
    }

    extension Digest {
        var lowercaseHex: String { BlackboxFormat.lowercaseHex(self) }
    }
#endif
