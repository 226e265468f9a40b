import BlackboxTestSupport
import CollectorTestSupport
import Crypto
import Foundation
import Testing

@testable import BlackboxCollector

/// The blob store's protocol (commit, standby, deletion against a concurrent upload, recovery, local
/// copies) on a real bucket (SeaweedFS).
@Suite("Blob store in an S3 bucket", .timeLimit(.minutes(3)))
struct S3BlobStoreTests {
    struct Fixture {
        let scratch = TemporaryDirectory(prefix: "s3-blobs")
        let client: S3Client
        let store: S3BlobStore

        init(cacheBytes: Int64 = 1 << 20) async throws {
            client = try await S3ClientTests.client(prefix: "collector")
            store = try S3BlobStore(
                client: client, area: "blobs/", fileExtension: "zip", spool: scratch.path + "/tmp",
                cache: try LocalBlobCache(directory: scratch.path + "/cache", maxBytes: cacheBytes))
        }

        /// A received upload of `bytes`, as the body receiver leaves it.
        func upload(_ bytes: Data) throws -> (temporaryPath: String, name: String, sha256: String, size: Int64) {
            let file = try store.makeTemporaryFile()
            close(file.descriptor)
            try bytes.write(to: URL(fileURLWithPath: file.path))
            let sha256 = SHA256.hash(data: bytes).lowercaseHex
            return (file.path, store.name(sha256: sha256), sha256, Int64(bytes.count))
        }

        func read(_ blob: String) async throws -> Data {
            try await store.withLocalFile(of: blob) { try Data(contentsOf: URL(fileURLWithPath: $0)) }
        }

        func remove() { scratch.remove() }
    }

    @Test("a batch is in the bucket when commit returns, byte for byte, and its files are gone")
    func batch() async throws {
        let fixture = try await Fixture()
        defer { fixture.remove() }
        let contents = (0..<20).map { Data("bundle \($0) \(UUID())".utf8) }
        let uploads = try contents.map(fixture.upload)
        try await fixture.store.commit(uploads, fileByFile: false)
        #expect(try await fixture.store.names().sorted() == uploads.map(\.name).sorted())
        for (bytes, upload) in zip(contents, uploads) {
            #expect(try await fixture.read(upload.name) == bytes)
            #expect(!FileManager.default.fileExists(atPath: upload.temporaryPath))
        }
        #expect(
            try await fixture.client.list(prefix: "").objects.allSatisfy { $0.key.hasPrefix("blobs/") },
            "every object under the store's area")
    }

    @Test("bytes already stored: the upload's copy waits as a standby, and restores the blob retention took")
    func standby() async throws {
        let fixture = try await Fixture()
        defer { fixture.remove() }
        let bytes = Data("the same bundle twice".utf8)
        try await fixture.store.commit([try fixture.upload(bytes)], fileByFile: true)
        let again = try fixture.upload(bytes)
        try await fixture.store.commit([again], fileByFile: true)
        #expect(FileManager.default.fileExists(atPath: again.temporaryPath), "kept as a standby")
        await fixture.store.releaseStandby(temporaryPath: again.temporaryPath, name: again.name)
        #expect(!FileManager.default.fileExists(atPath: again.temporaryPath))

        // Retention deletes the blob between the upload's commit and its transaction's end.
        let third = try fixture.upload(bytes)
        try await fixture.store.commit([third], fileByFile: true)
        try await fixture.store.deleteUnreferenced([third.name], referenced: { _ in [] })
        #expect(try await fixture.store.names().isEmpty)
        await fixture.store.releaseStandby(temporaryPath: third.temporaryPath, name: third.name)
        #expect(try await fixture.read(third.name) == bytes, "the standby put the referenced blob back")
    }

    @Test("deleting: only what nothing references goes; a failed check deletes nothing; no aside key is left")
    func deletion() async throws {
        let fixture = try await Fixture()
        defer { fixture.remove() }
        let uploads = try (0..<3).map { try fixture.upload(Data("blob \($0)".utf8)) }
        try await fixture.store.commit(uploads, fileByFile: false)
        let names = uploads.map(\.name)
        struct Unreachable: Error {}
        await #expect(throws: Unreachable.self) {
            try await fixture.store.deleteUnreferenced(names, referenced: { _ in throw Unreachable() })
        }
        #expect(try await fixture.store.names().sorted() == names.sorted(), "all put back")
        try await fixture.store.deleteUnreferenced(names + ["ab/missing.zip"], referenced: { _ in [names[1]] })
        #expect(try await fixture.store.names() == [names[1]])
        #expect(try await fixture.client.list(prefix: "").objects.map(\.key) == ["blobs/" + names[1]])
        #expect(try await fixture.read(names[1]) == Data("blob 1".utf8))
    }

    @Test("after a crash mid-deletion the blob is back at the next start; interrupted uploads are removed")
    func recovery() async throws {
        let fixture = try await Fixture()
        defer { fixture.remove() }
        let upload = try fixture.upload(Data("moved aside, then the process died".utf8))
        try await fixture.store.commit([upload], fileByFile: true)
        let key = fixture.store.key(of: upload.name)
        try await fixture.client.copy(from: key, to: key + S3BlobStore.asideMarker + "1234")
        try await fixture.client.delete(key: key)
        let interrupted = try fixture.store.makeTemporaryFile()
        close(interrupted.descriptor)
        #expect(try await fixture.store.names().isEmpty, "an aside blob is out of reach")
        await fixture.store.recover()
        #expect(try await fixture.store.names() == [upload.name])
        #expect(try await fixture.client.list(prefix: "").objects.count == 1)
        #expect(!FileManager.default.fileExists(atPath: interrupted.path))
    }

    @Test("local copies: fetched once, kept within their bound, never removed while read")
    func cache() async throws {
        let fixture = try await Fixture(cacheBytes: 100)
        defer { fixture.remove() }
        let uploads = try (0..<3).map { try fixture.upload(Data(repeating: UInt8($0), count: 60)) }
        try await fixture.store.commit(uploads, fileByFile: false)
        let cache = fixture.store.cache
        try await fixture.store.withLocalFile(of: uploads[0].name) { (first: String) async throws in
            // Two more copies while the first is read: over the bound, but the first stays.
            #expect(try await fixture.read(uploads[1].name) == Data(repeating: 1, count: 60))
            #expect(try await fixture.read(uploads[2].name) == Data(repeating: 2, count: 60))
            #expect(try Data(contentsOf: URL(fileURLWithPath: first)) == Data(repeating: 0, count: 60))
        }
        #expect(cache.bytes <= 100)
        let copies = try FileManager.default.contentsOfDirectory(atPath: cache.directory)
        #expect(copies.count == 1 && !copies[0].contains(".partial-"), "\(copies)")
        // The folder deleted while the collector runs: copies are fetched again.
        try FileManager.default.removeItem(atPath: cache.directory)
        #expect(try await fixture.read(uploads[0].name) == Data(repeating: 0, count: 60))
        #expect(try await fixture.read(uploads[2].name) == Data(repeating: 2, count: 60))
        // A copy the bucket no longer has is fetched again, and fails as a missing object.
        try await fixture.client.delete(key: fixture.store.key(of: uploads[0].name))
        cache.remove(fixture.store.key(of: uploads[0].name))
        await #expect(throws: S3Error.self) { _ = try await fixture.read(uploads[0].name) }
    }
}
