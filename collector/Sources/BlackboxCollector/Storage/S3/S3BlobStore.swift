import Foundation

/// `BlobStorage` in an S3-compatible bucket (`--blob-url s3://bucket/prefix`): blobs are objects
/// under `<prefix><area>/<2 hex>/<sha256>.<extension>` (`area` is `blobs` or `symbols`), so that
/// several collectors without a shared disk serve the same bundles, with PostgreSQL as their
/// database (docs/scale-out.md).
///
/// Uploads are still received into a local folder (`spool`, per instance): a commit puts each file
/// into the bucket and returns once the store confirmed it, so an acknowledged upload's bytes are in
/// the bucket before its row is committed. Readers that need a file get a cached copy
/// (`LocalBlobCache`). Deleting keeps `DirectoryBlobStore`'s protocol against a concurrent upload of
/// the same bytes, with a copy under an aside key standing in for the rename: a blob goes aside, the
/// database is asked again, and what it still names comes back; an upload that found its blob in
/// place keeps its file as a standby until its transaction is done, then puts it back if the blob
/// went meanwhile.
final class S3BlobStore: BlobStorage {
    let client: S3Client
    /// `blobs/` or `symbols/`: where this store's objects are, under the configured prefix.
    let area: String
    let fileExtension: String
    let spool: String
    let cache: LocalBlobCache

    /// Objects put at once by one commit (a batch of small uploads is many round trips otherwise).
    static let putsInFlight = 8

    init(client: S3Client, area: String, fileExtension: String, spool: String, cache: LocalBlobCache) throws {
        self.client = client
        self.area = area
        self.fileExtension = fileExtension
        self.spool = spool
        self.cache = cache
        try FileManager.default.createDirectory(atPath: spool, withIntermediateDirectories: true)
    }

    func key(of blob: String) -> String { area + blob }

    func makeTemporaryFile() throws -> TemporaryBlobFile { try TemporaryBlobFile.create(in: spool) }

    /// The spool's: uploads wait there until they are in the bucket.
    func availableBytes() -> Int64? { DiskSpace.available(at: spool) }

    func name(sha256: String) -> String { name(sha256: sha256, fileExtension: fileExtension) }

    func name(sha256: String, fileExtension: String) -> String {
        BlobName.of(sha256: sha256, fileExtension: fileExtension)
    }

    /// Each file is put unless an object of its size is already there (the same bytes: names are
    /// hashes); then the file stays as the standby `releaseStandby` takes care of. `fileByFile` means
    /// nothing here: every put is durable on its own.
    func commit(_ files: [(temporaryPath: String, name: String, sha256: String, size: Int64)], fileByFile: Bool)
        async throws
    {
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (index, file) in files.enumerated() {
                if index >= Self.putsInFlight { try await group.next() }
                group.addTask {
                    let key = self.key(of: file.name)
                    if let existing = try await self.client.head(key: key), existing.size == file.size { return }
                    try await self.client.put(
                        key: key, fromFile: file.temporaryPath, size: file.size, sha256: file.sha256)
                    unlink(file.temporaryPath)
                }
            }
            try await group.waitForAll()
        }
    }

    /// After the transaction that references the blob: a standby (the upload found its blob in place)
    /// is put back if retention deleted the blob meanwhile, then removed. Tried a few times: the
    /// blob is referenced now, and the standby is its last copy if it went.
    func releaseStandby(temporaryPath: String, name: String) async {
        var status = stat()
        guard stat(temporaryPath, &status) == 0 else { return }
        for attempt in 0..<3 {
            do {
                if try await client.head(key: key(of: name)) == nil {
                    try await client.put(key: key(of: name), fromFile: temporaryPath, size: Int64(status.st_size))
                }
                break
            } catch {
                try? await Task.sleep(for: .milliseconds(200 << attempt))
            }
        }
        unlink(temporaryPath)
    }

    func withLocalFile<Result>(of blob: String, _ body: (String) async throws -> Result) async throws -> Result {
        let key = key(of: blob)
        return try await cache.withFile(
            of: key,
            fetch: { path in try await self.client.get(key: key, toFile: path, maxBytes: Self.maxReadBytes) },
            body)
    }

    /// The largest object read back into the cache: far above any accepted upload.
    static let maxReadBytes: Int64 = 64 << 30

    static let asideMarker = ".deleting-"

    func deleteUnreferenced(_ blobs: [String], referenced: ([String]) async throws -> Set<String>) async throws {
        var aside: [(blob: String, key: String)] = []
        for blob in blobs {
            var random = SystemRandomNumberGenerator()
            let asideKey = key(of: blob) + Self.asideMarker + String(random.next() as UInt64, radix: 16)
            do {
                try await client.copy(from: key(of: blob), to: asideKey)
            } catch let error as S3Error where error.isMissingObject {
                continue
            }
            try await client.delete(key: key(of: blob))
            cache.remove(key(of: blob))
            aside.append((blob, asideKey))
        }
        let stillReferenced: Set<String>
        do {
            stillReferenced = try await referenced(aside.map(\.blob))
        } catch {
            for (blob, asideKey) in aside { try? await restore(asideKey, as: blob) }
            throw error
        }
        for (blob, asideKey) in aside {
            if stillReferenced.contains(blob) {
                try await restore(asideKey, as: blob)
            } else {
                try await client.delete(key: asideKey)
            }
        }
    }

    /// Puts an aside copy back (a copy placed meanwhile is kept) and removes the aside key.
    private func restore(_ asideKey: String, as blob: String) async throws {
        if try await client.head(key: key(of: blob)) == nil {
            try await client.copy(from: asideKey, to: key(of: blob))
        }
        try await client.delete(key: asideKey)
    }

    func names() async throws -> [String] {
        try await client.listAll(prefix: area).map { String($0.key.dropFirst(area.count)) }
            .filter { !$0.contains(Self.asideMarker) }
    }

    /// Uploads a stop interrupted go; aside copies a crash left behind go back in place (the next
    /// retention pass decides again).
    func recover() async {
        TemporaryBlobFile.removeAll(in: spool)
        for object in (try? await client.listAll(prefix: area)) ?? [] {
            guard let marker = object.key.range(of: Self.asideMarker) else { continue }
            let blob = String(object.key[..<marker.lowerBound].dropFirst(area.count))
            try? await restore(object.key, as: blob)
        }
    }
}
