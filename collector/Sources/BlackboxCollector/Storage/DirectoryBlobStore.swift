import BlackboxSystem
import Crypto
import Foundation
import NIOPosix

#if canImport(Glibc)
    import Glibc
#endif

/// `BlobStorage` in a directory: raw bundles and symbol files on disk, named by their sha256 (never by
/// anything inside them). Uploads stream into `tmp/`; `commit` makes one durable: fsync, link into `blobs/<2 hex>/<sha256>.zip`, fsync the
/// directory. A blob that already exists is kept (same content, same name), and the upload's copy
/// waits as a standby until its transaction is done (see "Deleting blobs safely" below).
///
/// Once durable, a large blob's pages are dropped from the page cache: it is read at most once more
/// soon (by the log indexer, which can read it from disk), and caching every upload would push out
/// what is worth keeping (the database) and make each new upload take fresh memory. On this VM a
/// fresh page costs ten times a recycled one (see docs/collector.md): 5 MB uploads went from 69 to
/// 86-102 per second.
final class DirectoryBlobStore: BlobStorage {
    let root: String
    let temporaryDirectory: String

    /// Blobs at least this large leave the page cache once durable. Small ones stay: the indexer
    /// reads them moments later, and dropping them costs more than it saves.
    static let uncachedBlobBytes: Int64 = 1 << 20

    /// Blobs are `<2 hex>/<sha256>.<fileExtension>`: `zip` for bundles, `elf` for symbol files.
    let fileExtension: String

    /// Where commits wait for the disk (fsync, syncfs): never the async executor. The bundles' store
    /// has a pool of its own (`GroupCommitter.flushPool`), so that flushes never wait behind other
    /// blocking work.
    let commitPool: NIOThreadPool

    init(
        root: String, temporaryDirectory: String, fileExtension: String = "zip", commitPool: NIOThreadPool = .singleton
    ) throws {
        self.root = root
        self.temporaryDirectory = temporaryDirectory
        self.fileExtension = fileExtension
        self.commitPool = commitPool
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: temporaryDirectory, withIntermediateDirectories: true)
    }

    /// Removes uploads that were in flight when the server stopped.
    func removeTemporaryFiles() { TemporaryBlobFile.removeAll(in: temporaryDirectory) }

    func availableBytes() -> Int64? { DiskSpace.available(at: root) }

    /// The blob's own file: it stays until retention deletes the blob.
    func withLocalFile<Result>(of blob: String, _ body: (String) async throws -> Result) async throws -> Result {
        try await body(path(of: blob))
    }

    func names() throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: root).flatMap { directory in
            try FileManager.default.contentsOfDirectory(atPath: "\(root)/\(directory)")
                .filter { !$0.contains(Self.asideMarker) }.map { "\(directory)/\($0)" }
        }
    }

    func recover() {
        removeTemporaryFiles()
        restoreAsideBlobs()
    }

    func makeTemporaryFile() throws -> TemporaryBlobFile { try TemporaryBlobFile.create(in: temporaryDirectory) }

    /// Relative name of this store's blob for a hash.
    func name(sha256: String) -> String { name(sha256: sha256, fileExtension: fileExtension) }

    func name(sha256: String, fileExtension: String) -> String {
        BlobName.of(sha256: sha256, fileExtension: fileExtension)
    }

    func path(of blob: String) -> String { "\(root)/\(blob)" }

    /// Makes one closed temporary file durable under its hash (the file-by-file way of `commit`). When
    /// the blob existed already, the temporary file stays as a standby copy until `releaseStandby`
    /// (see there).
    private func commitOne(temporaryPath: String, name: String, sha256: String, size: Int64) throws {
        let fd = open(temporaryPath, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw StorageError.io(path: temporaryPath, SystemCallError("open")) }
        guard fsync(fd) == 0 else {
            let error = SystemCallError("fsync")
            close(fd)
            throw StorageError.io(path: temporaryPath, error)
        }
        if size >= Self.uncachedBlobBytes { Self.dropCachedPages(fd) }
        close(fd)
        try place(temporaryPath: temporaryPath, name: name, sha256: sha256)
        Self.syncDirectory((path(of: name) as NSString).deletingLastPathComponent)
    }

    /// Makes many temporary files durable at once: each is linked into place under its hash, then one
    /// file-system flush makes their contents and their names durable together.
    ///
    /// Linking before the flush is safe because nothing refers to a blob until the database commit
    /// that follows this call: a crash before the flush leaves at most unreferenced files. An
    /// existing blob is never replaced (it may be referenced, and a not-yet-flushed copy must not
    /// take its place) unless its bytes do not hash to its name: a leftover of such a crash, which
    /// the new copy repairs. With `fileByFile`, or where `syncfs` is missing, each file and its
    /// directory are flushed on their own instead: cheaper for a few small files while others write
    /// a lot of data to the same file system (which `syncfs` would wait for too).
    func commit(
        _ files: [(temporaryPath: String, name: String, sha256: String, size: Int64)], fileByFile: Bool = false
    ) async throws {
        try await commitPool.runIfActive { try self.commitWaitingForTheDisk(files, fileByFile: fileByFile) }
    }

    /// `commit` on the calling thread, which waits for the disk.
    func commitWaitingForTheDisk(
        _ files: [(temporaryPath: String, name: String, sha256: String, size: Int64)], fileByFile: Bool
    ) throws {
        guard let flush = Self.syncfs, files.count > 1, !fileByFile else {
            for file in files {
                try commitOne(temporaryPath: file.temporaryPath, name: file.name, sha256: file.sha256, size: file.size)
            }
            return
        }
        let rootDescriptor = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard rootDescriptor >= 0 else { throw StorageError.io(path: root, SystemCallError("open")) }
        defer { close(rootDescriptor) }
        // Opened before linking (the temporary name goes away), released after the flush, when
        // their pages are clean and can be dropped.
        var large: [Int32] = []
        defer { for fd in large { close(fd) } }
        for file in files {
            if file.size >= Self.uncachedBlobBytes {
                let fd = open(file.temporaryPath, O_RDONLY | O_CLOEXEC)
                if fd >= 0 { large.append(fd) }
            }
            try place(temporaryPath: file.temporaryPath, name: file.name, sha256: file.sha256)
        }
        guard flush(rootDescriptor) == 0 else {
            throw StorageError.io(path: root, SystemCallError("syncfs"))
        }
        for fd in large { Self.dropCachedPages(fd) }
    }

    /// Only clean pages are dropped, so this must follow the flush that wrote them.
    private static func dropCachedPages(_ fd: Int32) {
        _ = posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED)
    }

    /// Gives the temporary file its blob name without replacing a sound existing blob.
    private func place(temporaryPath: String, name: String, sha256: String) throws {
        let target = path(of: name)
        let directory = (target as NSString).deletingLastPathComponent
        if mkdir(directory, 0o700) != 0 && errno != EEXIST {
            throw StorageError.io(path: directory, SystemCallError("mkdir"))
        }
        if link(temporaryPath, target) == 0 {
            unlink(temporaryPath)
            return
        }
        guard errno == EEXIST else { throw StorageError.io(path: target, SystemCallError("link")) }
        if (try? Self.sha256(ofFileAt: target)) == sha256 {
            // Kept as a standby until the batch's transaction: retention (of this or another
            // instance) may be deleting this very blob because nothing referenced it a moment ago.
            return
        } else if rename(temporaryPath, target) != 0 {
            throw StorageError.io(path: target, SystemCallError("rename"))
        }
    }

    static func sha256(ofFileAt path: String) throws -> String {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw StorageError.io(path: path, SystemCallError("open")) }
        defer { close(fd) }
        var hasher = SHA256()
        var buffer = [UInt8](repeating: 0, count: 256 << 10)
        while true {
            let count = retryingEINTR { buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) } }
            guard count >= 0 else { throw StorageError.io(path: path, SystemCallError("read")) }
            if count == 0 { break }
            buffer.withUnsafeBytes { hasher.update(bufferPointer: UnsafeRawBufferPointer(rebasing: $0[..<count])) }
        }
        return hasher.finalize().lowercaseHex
    }

    /// `syncfs(2)`: Glibc's Swift overlay does not export it, so it is looked up once at run time.
    private static let syncfs: (@convention(c) (Int32) -> Int32)? = {
        guard let symbol = dlsym(nil, "syncfs") else { return nil }
        return unsafeBitCast(symbol, to: (@convention(c) (Int32) -> Int32).self)
    }()

    // MARK: Deleting blobs safely against concurrent uploads of the same bytes
    //
    // Retention (of any instance) deletes a blob nothing references; an upload of the same bytes may
    // be committing a reference to it at that moment. Neither waits for the other:
    // - retention first moves the blob aside (`moveAside`), only then checks the database again, and
    //   deletes the aside copy if still unreferenced, else puts it back (`restore`);
    // - an upload that found its blob already in place kept its own copy as a standby; after its
    //   transaction committed, `releaseStandby` puts the standby in place if the blob is gone.
    // Whatever the interleaving, a blob referenced by a committed bundle ends up in place: either
    // retention's check saw the reference, or the upload's check (after its commit, so after
    // retention moved the blob aside) saw the blob missing.

    /// Renames the blob to a unique aside name; nil when it is not there.
    func moveAside(_ blob: String) -> String? {
        let aside = path(of: blob) + Self.asideMarker + UUID().uuidString
        return rename(path(of: blob), aside) == 0 ? aside : nil
    }

    /// Puts an aside copy back (a copy placed meanwhile is kept) and removes the aside name.
    func restore(_ aside: String, as blob: String) {
        if link(aside, path(of: blob)) == 0 {
            Self.syncDirectory((path(of: blob) as NSString).deletingLastPathComponent)
        }
        unlink(aside)
    }

    func removeAside(_ aside: String) { unlink(aside) }

    /// Deletes those of `blobs` that nothing references, by the protocol above: each goes aside,
    /// `referenced` is asked again, and what it names goes back (all of them when it fails).
    func deleteUnreferenced(
        _ blobs: [String], referenced: ([String]) async throws -> Set<String>
    ) async throws {
        let aside = blobs.compactMap { blob in moveAside(blob).map { (blob, $0) } }
        let stillReferenced: Set<String>
        do {
            stillReferenced = try await referenced(aside.map(\.0))
        } catch {
            for (blob, path) in aside { restore(path, as: blob) }
            throw error
        }
        for (blob, path) in aside {
            if stillReferenced.contains(blob) { restore(path, as: blob) } else { removeAside(path) }
        }
    }

    /// After the transaction that references the blob: if the upload kept a standby copy and the
    /// blob is gone, the standby takes its place; then the standby goes.
    func releaseStandby(temporaryPath: String, name: String) {
        guard access(temporaryPath, F_OK) == 0 else { return }
        let target = path(of: name)
        if access(target, F_OK) != 0, link(temporaryPath, target) == 0 {
            Self.syncDirectory((target as NSString).deletingLastPathComponent)
        }
        unlink(temporaryPath)
    }

    static let asideMarker = ".deleting-"

    /// Aside copies a crash left behind go back in place; the next retention pass decides again.
    func restoreAsideBlobs() {
        guard let directories = try? FileManager.default.contentsOfDirectory(atPath: root) else { return }
        for directory in directories {
            let names = (try? FileManager.default.contentsOfDirectory(atPath: "\(root)/\(directory)")) ?? []
            for name in names {
                guard let marker = name.range(of: Self.asideMarker) else { continue }
                restore("\(root)/\(directory)/\(name)", as: "\(directory)/\(name[..<marker.lowerBound])")
            }
        }
    }

    static func syncDirectory(_ path: String) {
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if fd >= 0 {
            fsync(fd)
            close(fd)
        }
    }
}
