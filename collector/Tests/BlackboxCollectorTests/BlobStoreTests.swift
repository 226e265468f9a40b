import BlackboxTestSupport
import CollectorTestSupport
import Crypto
import Foundation
import Testing

@testable import BlackboxCollector

@Suite("Blob store: durable placement under the content hash")
struct BlobStoreTests {
    struct Fixture {
        let scratch = TemporaryDirectory(prefix: "blobs")
        var directory: String { scratch.path }
        let blobs: DirectoryBlobStore

        init() throws {
            blobs = try DirectoryBlobStore(root: "\(scratch.path)/blobs", temporaryDirectory: "\(scratch.path)/tmp")
        }

        /// A closed temporary file holding `bytes`, their blob name, sha256 and size.
        func upload(_ bytes: Data) throws -> (temporaryPath: String, name: String, sha256: String, size: Int64) {
            let file = try blobs.makeTemporaryFile()
            close(file.descriptor)
            try bytes.write(to: URL(fileURLWithPath: file.path))
            let sha256 = SHA256.hash(data: bytes).lowercaseHex
            return (file.path, blobs.name(sha256: sha256), sha256, Int64(bytes.count))
        }

        /// How many of the file's pages are in the page cache (mincore over a mapping of it).
        func residentPages(_ path: String) throws -> Int {
            let fd = open(path, O_RDONLY | O_CLOEXEC)
            try #require(fd >= 0)
            defer { close(fd) }
            var info = stat()
            try #require(fstat(fd, &info) == 0)
            let size = Int(info.st_size)
            let mapping = try #require(mmap(nil, size, PROT_READ, MAP_SHARED, fd, 0))
            try #require(mapping != MAP_FAILED)
            defer { munmap(mapping, size) }
            let pageSize = Int(sysconf(Int32(_SC_PAGESIZE)))
            var vector = [UInt8](repeating: 0, count: (size + pageSize - 1) / pageSize)
            try #require(mincore(mapping, size, &vector) == 0)
            return vector.filter { $0 & 1 != 0 }.count
        }

        func inode(_ path: String) -> UInt {
            var info = stat()
            return stat(path, &info) == 0 ? UInt(info.st_ino) : 0
        }

        func remove() { scratch.remove() }
    }

    @Test("through the storage protocol: names, local files, a sweep's list; recovery after a crash mid-deletion")
    func storageProtocol() async throws {
        let fixture = try Fixture()
        defer { fixture.remove() }
        let storage: any BlobStorage = fixture.blobs
        let uploads = try (0..<3).map { try fixture.upload(Data("blob \($0)".utf8)) }
        try await storage.commit(uploads, fileByFile: false)
        let names = uploads.map { storage.name(sha256: $0.sha256) }
        #expect(try await storage.names().sorted() == names.sorted())
        let first = try await storage.withLocalFile(of: names[0]) { try Data(contentsOf: URL(fileURLWithPath: $0)) }
        #expect(first == Data("blob 0".utf8))
        // A deletion a crash interrupted (the blob moved aside) and an upload a stop interrupted.
        let aside = try #require(fixture.blobs.moveAside(names[1]))
        let interrupted = try storage.makeTemporaryFile()
        close(interrupted.descriptor)
        #expect(try await storage.names().sorted() == [names[0], names[2]].sorted(), "an aside blob is out of reach")
        await storage.recover()
        #expect(try await storage.names().sorted() == names.sorted(), "recovery puts it back")
        #expect(access(aside, F_OK) != 0 && access(interrupted.path, F_OK) != 0)
        try await storage.deleteUnreferenced(names, referenced: { _ in [names[2]] })
        #expect(try await storage.names() == [names[2]])
    }

    @Test(
        "a batch lands under its hashes, byte for byte, with no temporary file left (one flush, or file by file)",
        arguments: [false, true])
    func batchCommit(fileByFile: Bool) async throws {
        let fixture = try Fixture()
        defer { fixture.remove() }
        let contents = (0..<5).map { Data("bundle \($0) \(UUID())".utf8) }
        let uploads = try contents.map(fixture.upload)
        try await fixture.blobs.commit(uploads, fileByFile: fileByFile)
        for (bytes, upload) in zip(contents, uploads) {
            let stored = fixture.blobs.path(of: ZipBundleFormat.blobName(sha256: upload.sha256))
            #expect(FileManager.default.contents(atPath: stored) == bytes)
            #expect(!FileManager.default.fileExists(atPath: upload.temporaryPath))
        }
    }

    @Test("an existing sound blob is kept, not replaced by a copy that is not yet flushed")
    func soundBlobKept() async throws {
        let fixture = try Fixture()
        defer { fixture.remove() }
        let bytes = Data("the same bundle twice".utf8)
        try await fixture.blobs.commit([try fixture.upload(bytes), try fixture.upload(Data("another".utf8))])
        let stored = fixture.blobs.path(of: ZipBundleFormat.blobName(sha256: SHA256.hash(data: bytes).lowercaseHex))
        let original = fixture.inode(stored)

        let again = try fixture.upload(bytes)
        try await fixture.blobs.commit([again, try fixture.upload(Data("a third".utf8))])
        #expect(fixture.inode(stored) == original)
        #expect(FileManager.default.contents(atPath: stored) == bytes)
        // The upload's copy waits as a standby until its transaction is done, then goes.
        #expect(FileManager.default.fileExists(atPath: again.temporaryPath))
        fixture.blobs.releaseStandby(temporaryPath: again.temporaryPath, name: again.name)
        #expect(!FileManager.default.fileExists(atPath: again.temporaryPath))
        #expect(fixture.inode(stored) == original)
    }

    @Test("a blob that retention had moved aside when the process died is back in place at the next start")
    func asideBlobRestoredAtStart() async throws {
        let fixture = try Fixture()
        defer { fixture.remove() }
        let bytes = Data("moved aside, then the process died".utf8)
        let upload = try fixture.upload(bytes)
        try await fixture.blobs.commit([upload])
        let blob = ZipBundleFormat.blobName(sha256: upload.sha256)
        let aside = try #require(fixture.blobs.moveAside(blob))
        #expect(!FileManager.default.fileExists(atPath: fixture.blobs.path(of: blob)))
        fixture.blobs.restoreAsideBlobs()
        #expect(FileManager.default.contents(atPath: fixture.blobs.path(of: blob)) == bytes)
        #expect(!FileManager.default.fileExists(atPath: aside))
    }

    @Test("a blob left torn by a crash before the flush is repaired by the next upload of those bytes")
    func tornBlobRepaired() async throws {
        let fixture = try Fixture()
        defer { fixture.remove() }
        let bytes = Data(repeating: 0x5A, count: 100_000)
        let sha256 = SHA256.hash(data: bytes).lowercaseHex
        // What a crash between link and flush can leave: the name, with the bytes not all there.
        let stored = fixture.blobs.path(of: ZipBundleFormat.blobName(sha256: sha256))
        try FileManager.default.createDirectory(
            atPath: (stored as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try bytes.prefix(4096).write(to: URL(fileURLWithPath: stored))

        try await fixture.blobs.commit([try fixture.upload(bytes), try fixture.upload(Data("other".utf8))])
        #expect(FileManager.default.contents(atPath: stored) == bytes)
        #expect(try DirectoryBlobStore.sha256(ofFileAt: stored) == sha256)
    }
    /// tmpfs keeps files only in memory: nothing there can leave the page cache. (`statfs` is not in
    /// Swift's Glibc module; stat(1) reads the same.)
    static var temporaryDirectoryIsTmpfs: Bool {
        guard let (_, output) = try? ChildRun.run("/usr/bin/stat", ["-f", "-c", "%T", NSTemporaryDirectory()])
        else { return false }
        return String(decoding: output, as: UTF8.self).hasPrefix("tmpfs")
    }

    @Test(
        "large blobs leave the page cache once durable, in a batch and alone",
        .disabled(if: temporaryDirectoryIsTmpfs, "the temporary directory is on tmpfs"))
    func largeBlobsAreNotCached() async throws {
        let fixture = try Fixture()
        defer { fixture.remove() }
        func large(_ tag: String) -> Data {
            Data(
                (0..<(Int(DirectoryBlobStore.uncachedBlobBytes) + 100_000)).map { UInt8(truncatingIfNeeded: $0 &* 31) }
                    + tag.utf8)
        }
        let batch = [try fixture.upload(large("a")), try fixture.upload(large("b"))]
        try await fixture.blobs.commit(batch)
        let alone = try fixture.upload(large("c"))
        try await fixture.blobs.commit([alone])
        for upload in batch + [alone] {
            let path = fixture.blobs.path(of: ZipBundleFormat.blobName(sha256: upload.sha256))
            #expect(try fixture.residentPages(path) == 0, "\(path)")
            #expect(try Data(contentsOf: URL(fileURLWithPath: path)).count == Int(upload.size))
        }
    }
}
