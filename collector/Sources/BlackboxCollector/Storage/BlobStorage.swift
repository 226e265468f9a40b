import BlackboxSystem
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Where accepted bytes live (bundles, symbol files): content-addressed names
/// (`<2 hex>/<sha256>.<extension>`, never anything inside the bytes), durable once committed, deleted
/// only when nothing references them. Uploads are received into local temporary files first.
/// `DirectoryBlobStore` keeps blobs in a directory; an object store is another conformance behind
/// the same calls (docs/architecture.md, "Storage"), which is why every call that reaches the blobs
/// themselves is async and no caller holds a blob's path beyond `withLocalFile`.
protocol BlobStorage: Sendable {
    /// A new local file for an upload's body.
    func makeTemporaryFile() throws -> TemporaryBlobFile
    /// Free bytes where uploads are received (and, for a directory, blobs kept); nil when unknown.
    func availableBytes() -> Int64?
    /// This store's name for the blob with these bytes, in its default format.
    func name(sha256: String) -> String
    /// The name for the blob with these bytes in another format (`envelope`): the extension says
    /// which format reads it back (`BundleReader`).
    func name(sha256: String, fileExtension: String) -> String
    /// Makes received files durable under their names (each `name(sha256:…)` of its bytes). A blob
    /// that exists already is kept, and the upload's copy waits as a standby until `releaseStandby`,
    /// after the transaction that references it (see `DirectoryBlobStore`, "Deleting blobs safely").
    func commit(_ files: [(temporaryPath: String, name: String, sha256: String, size: Int64)], fileByFile: Bool)
        async throws
    func releaseStandby(temporaryPath: String, name: String) async
    /// Runs `body` with a local file holding the blob's bytes, for readers that need random access (a
    /// zip's directory, an ELF file for the symbolizer, a download). The file stays until `body`
    /// returns; it may be a cached copy, so it is never written to nor kept.
    func withLocalFile<Result>(of blob: String, _ body: (String) async throws -> Result) async throws -> Result
    /// Deletes those of `blobs` that nothing references: each is taken out of reach first, then
    /// `referenced` is asked again, and what it names is put back.
    func deleteUnreferenced(_ blobs: [String], referenced: ([String]) async throws -> Set<String>) async throws
    /// Every blob's name (a sweep for blobs no record names).
    func names() async throws -> [String]
    /// At start: removes uploads a stop interrupted and undoes deletions a crash interrupted.
    func recover() async
}

/// The one naming rule of content-addressed blobs: `<2 hex>/<sha256>.<extension>`. Formats name the
/// blob a plan records with it; a store places bytes under it.
enum BlobName {
    static func of(sha256: String, fileExtension: String) -> String {
        "\(sha256.prefix(2))/\(sha256).\(fileExtension)"
    }
}

extension BlobStorage {
    func commit(temporaryPath: String, sha256: String, size: Int64) async throws {
        try await commit([(temporaryPath, name(sha256: sha256), sha256, size)], fileByFile: true)
    }
}

/// A temporary file an upload is received into, open for writing.
struct TemporaryBlobFile: Sendable {
    let path: String
    let descriptor: Int32

    /// A new, empty file in `directory`.
    static func create(in directory: String) throws -> TemporaryBlobFile {
        // 128 random bits from `getrandom`: Foundation's `UUID()` opens, reads and closes
        // /dev/urandom for each one, three system calls on every upload.
        var random = SystemRandomNumberGenerator()
        let unique = [random.next(), random.next()].map { String($0 as UInt64, radix: 16) }.joined(separator: "-")
        let path = "\(directory)/upload-\(unique)"
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw StorageError.io(path: path, SystemCallError("open")) }
        return TemporaryBlobFile(path: path, descriptor: fd)
    }

    /// Removes the uploads a stop interrupted.
    static func removeAll(in directory: String) {
        for name in (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [] {
            unlink("\(directory)/\(name)")
        }
    }

    /// All of `bytes`, retrying short writes and EINTR.
    func write(_ bytes: UnsafeRawBufferPointer) throws {
        guard writeFully(descriptor, bytes.baseAddress, bytes.count) else {
            throw StorageError.io(path: path, SystemCallError("write"))
        }
    }
}

public enum StorageError: Error, CustomStringConvertible {
    /// A system call on a file failed (its errno kept: ENOSPC and EACCES call for different answers).
    case io(path: String, SystemCallError)
    case notFound(String)
    case invalidConfiguration(String)
    /// The store is closing or closed (the server is stopping).
    case closed(String)
    public var description: String {
        switch self {
        case .io(let path, let error): "\(path): \(error)"
        case .notFound(let what): "not found: \(what)"
        case .invalidConfiguration(let problem): problem
        case .closed(let store): "\(store) is closed: the server is stopping"
        }
    }
}
