import BlackboxTestSupport
import Foundation
import Testing

@testable import BlackboxCollector

@Suite("Bundle reader: reading stored files back")
struct BundleReaderTests {
    @Test("the viewer's start of a .gz log inflates only what it shows: damage past that does not matter")
    func gzipPrefixReadsOnlyWhatItShows() throws {
        let scratch = TemporaryDirectory(prefix: "bundle-reader")
        defer { scratch.remove() }
        let directory = scratch.path
        let text = (0..<300_000).map { "line \($0) of a long archived log, with some words after it\n" }.joined()
        try text.write(toFile: "\(directory)/app.log", atomically: false, encoding: .utf8)
        #expect(try run("/bin/gzip", ["-6", "app.log"], in: directory) == 0)
        var gz = try Data(contentsOf: URL(fileURLWithPath: "\(directory)/app.log.gz"))
        // The last quarter is garbage: a reader that inflated the whole archive would fail.
        let damaged = gz.count * 3 / 4
        gz.replaceSubrange(damaged..<gz.count, with: Data(repeating: 0xFF, count: gz.count - damaged))
        let zip = try BundleArchive.make(app: .init(name: "shop"), host: "h", logs: [("app.log.gz", gz)])

        let blobs = try BlobStore(root: "\(directory)/blobs", temporaryDirectory: "\(directory)/tmp")
        let upload = try blobs.makeTemporaryFile()
        close(upload.descriptor)
        try zip.write(to: URL(fileURLWithPath: upload.path))
        let sha256 = BundleArchive.sha256(zip)
        _ = try blobs.commit(temporaryPath: upload.path, sha256: sha256, size: Int64(zip.count))
        let blob = BlobStore.blobName(sha256: sha256)
        let reader = BundleReader(blobs: blobs, maxBytes: 64 << 20)

        let limit = 1 << 20
        let (head, isComplete) = try reader.prefix(of: "logs/app.log.gz", inBlob: blob, limit: limit, gunzip: true)
        #expect(head.count == limit && !isComplete)
        #expect(head == Data(text.utf8.prefix(limit)))
        #expect(throws: (any Error).self, "the whole archive is damaged, so reading all of it fails") {
            try reader.lines(of: "logs/app.log.gz", inBlob: blob)
        }
    }
}
