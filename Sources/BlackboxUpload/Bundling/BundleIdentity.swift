#if Upload
    import BlackboxFormat
    import Crypto
    import Foundation
    import ZIPFoundation

    /// A stable `Upload-Id` for a zip someone else made, so that sending the same file twice (a retry,
    /// a second run) stores it once: the manifest's bundle id when there is one, else a UUID made from
    /// the file's sha256.
    public enum BundleIdentity {
        public static func uploadID(forZipAt path: String) throws(BundleError) -> UUID {
            if let id = manifest(ofZipAt: path)?.bundleID { return id }
            guard let handle = FileHandle(forReadingAtPath: path) else {
                throw BundleError(path: path, reason: "cannot read")
            }
            defer { try? handle.close() }
            var hasher = SHA256()
            while let chunk = try? handle.read(upToCount: 1 << 20), !chunk.isEmpty { hasher.update(data: chunk) }
            return nameBased(hasher.finalize())
        }

        /// A UUID made from a digest (version 5 layout: name-based, here content- or name-based): the
        /// same input gives the same id.
        static func nameBased(_ digest: some Sequence<UInt8>) -> UUID {
            var bytes = Array(digest.prefix(16))
            bytes[6] = (bytes[6] & 0x0F) | 0x50
            bytes[8] = (bytes[8] & 0x3F) | 0x80  // RFC 4122 variant
            return UUID(
                uuid: (
                    bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7], bytes[8], bytes[9],
                    bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]
                ))
        }

        /// The bundle's `manifest.json`; nil when it has none or it cannot be read.
        static func manifest(ofZipAt path: String) -> BundleManifest? {
            do {
                let archive = try Archive(url: URL(fileURLWithPath: path), accessMode: .read)
                guard let entry = archive["manifest.json"], entry.uncompressedSize < 1 << 20 else { return nil }
                var data = Data()
                _ = try archive.extract(entry, consumer: { data.append($0) })
                return try BundleManifest.decode(data)
            } catch {
                return nil
            }
        }
    }
#endif
