import Crypto
import Foundation
import Testing

@testable import BlackboxCollector

@Suite("Blob store: durable placement under the content hash")
struct BlobStoreTests {
    struct Fixture {
        let directory: String
        let blobs: BlobStore

        init() throws {
            directory = NSTemporaryDirectory() + "blobs-\(UUID().uuidString)"
            blobs = try BlobStore(root: "\(directory)/blobs", temporaryDirectory: "\(directory)/tmp")
        }

        /// A closed temporary file holding `bytes`, and their sha256.
        func upload(_ bytes: Data) throws -> (temporaryPath: String, sha256: String) {
            let file = try blobs.makeTemporaryFile()
            close(file.descriptor)
            try bytes.write(to: URL(fileURLWithPath: file.path))
            return (file.path, SHA256.hash(data: bytes).lowercaseHex)
        }

        func inode(_ path: String) -> UInt {
            var info = stat()
            return stat(path, &info) == 0 ? UInt(info.st_ino) : 0
        }

        func remove() { try? FileManager.default.removeItem(atPath: directory) }
    }

    @Test("a batch lands under its hashes, byte for byte, with no temporary file left")
    func batchCommit() throws {
        let fixture = try Fixture()
        defer { fixture.remove() }
        let contents = (0..<5).map { Data("bundle \($0) \(UUID())".utf8) }
        let uploads = try contents.map(fixture.upload)
        try fixture.blobs.commit(uploads)
        for (bytes, upload) in zip(contents, uploads) {
            let stored = fixture.blobs.path(of: BlobStore.blobName(sha256: upload.sha256))
            #expect(FileManager.default.contents(atPath: stored) == bytes)
            #expect(!FileManager.default.fileExists(atPath: upload.temporaryPath))
        }
    }

    @Test("an existing sound blob is kept, not replaced by a copy that is not yet flushed")
    func soundBlobKept() throws {
        let fixture = try Fixture()
        defer { fixture.remove() }
        let bytes = Data("the same bundle twice".utf8)
        try fixture.blobs.commit([try fixture.upload(bytes), try fixture.upload(Data("another".utf8))])
        let stored = fixture.blobs.path(of: BlobStore.blobName(sha256: SHA256.hash(data: bytes).lowercaseHex))
        let original = fixture.inode(stored)

        let again = try fixture.upload(bytes)
        try fixture.blobs.commit([again, try fixture.upload(Data("a third".utf8))])
        #expect(fixture.inode(stored) == original)
        #expect(FileManager.default.contents(atPath: stored) == bytes)
        #expect(!FileManager.default.fileExists(atPath: again.temporaryPath))
    }

    @Test("a blob left torn by a crash before the flush is repaired by the next upload of those bytes")
    func tornBlobRepaired() throws {
        let fixture = try Fixture()
        defer { fixture.remove() }
        let bytes = Data(repeating: 0x5A, count: 100_000)
        let sha256 = SHA256.hash(data: bytes).lowercaseHex
        // What a crash between link and flush can leave: the name, with the bytes not all there.
        let stored = fixture.blobs.path(of: BlobStore.blobName(sha256: sha256))
        try FileManager.default.createDirectory(
            atPath: (stored as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try bytes.prefix(4096).write(to: URL(fileURLWithPath: stored))

        try fixture.blobs.commit([try fixture.upload(bytes), try fixture.upload(Data("other".utf8))])
        #expect(FileManager.default.contents(atPath: stored) == bytes)
        #expect(try BlobStore.sha256(ofFileAt: stored) == sha256)
    }
}
