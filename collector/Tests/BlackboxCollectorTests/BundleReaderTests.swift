import BlackboxTestSupport
import Foundation
import Testing

@testable import BlackboxCollector

@Suite("Bundle reader: reading stored files back")
struct BundleReaderTests {
    /// A second format in the manner of a new upload protocol: the blob is the one file itself.
    struct SingleFileFormat: BundleFormat {
        static var blobExtension: String { "one" }
        func inspect(_ body: ReceivedBody, for upload: UploadAdmission.Admitted, receivedAt: Date) async throws
            -> FormatInspection
        { throw APIError.notAZip() }
        func extract(
            _ path: String, fromBlobAt blobFile: String, chunkBytes: Int, maxBytes: Int,
            consumer: (Data) throws -> Void
        ) throws {
            guard path == "only" else { throw BundleReader.Failure.missing(path) }
            let data = try Data(contentsOf: URL(fileURLWithPath: blobFile))
            guard data.count <= maxBytes else { throw BundleReader.Failure.tooLarge(path) }
            try consumer(data)
        }
        func contents(of paths: Set<String>, fromBlobAt blobFile: String, maxBytes: Int) throws
            -> [String: Result<Data, any Error>]
        {
            var results: [String: Result<Data, any Error>] = [:]
            for path in paths {
                results[path] = Result {
                    var data = Data()
                    try extract(path, fromBlobAt: blobFile, chunkBytes: 1 << 16, maxBytes: maxBytes) { data += $0 }
                    return data
                }
            }
            return results
        }
    }

    @Test("the reader reads each blob in the format that stored it, and refuses one no format claims")
    func formatsByBlob() async throws {
        let scratch = TemporaryDirectory(prefix: "bundle-formats")
        defer { scratch.remove() }
        let blobs = try DirectoryBlobStore(root: "\(scratch.path)/blobs", temporaryDirectory: "\(scratch.path)/tmp")
        try FileManager.default.createDirectory(atPath: "\(scratch.path)/blobs/ab", withIntermediateDirectories: true)
        try Data("first\nsecond\n".utf8).write(to: URL(fileURLWithPath: blobs.path(of: "ab/abc.one")))
        try Data("PK not really".utf8).write(to: URL(fileURLWithPath: blobs.path(of: "ab/abd.zip")))
        let reader = BundleReader(
            blobs: blobs, maxBytes: 1 << 20,
            formats: [ZipBundleFormat(limits: IngestLimits(), inspectionMemory: nil), SingleFileFormat()])
        try await reader.withBundle("ab/abc.one") { (bundle: LocalBundle) throws in
            #expect(try bundle.lines(of: "only") == ["first", "second"])
            #expect(try bundle.lines(of: ["only", "other"])["only"]?.get() == ["first", "second"])
            #expect(throws: BundleReader.Failure.self) { try bundle.contents(of: "other") }
        }
        await #expect(throws: BundleReader.Failure.self, "a damaged zip") {
            try await reader.withBundle("ab/abd.zip") { try $0.contents(of: "only") }
        }
        await #expect(throws: BundleReader.Failure.self, "no format stores .tar") {
            try await reader.withBundle("ab/abe.tar") { try $0.contents(of: "only") }
        }
        let zipOnly = BundleReader(
            blobs: blobs, maxBytes: 1 << 20, formats: [ZipBundleFormat(limits: IngestLimits(), inspectionMemory: nil)])
        await #expect(throws: BundleReader.Failure.self) {
            try await zipOnly.withBundle("ab/abc.one") { try $0.contents(of: "only") }
        }
    }

    @Test("the viewer's start of a .gz log inflates only what it shows: damage past that does not matter")
    func gzipPrefixReadsOnlyWhatItShows() async throws {
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

        let blobs = try DirectoryBlobStore(root: "\(directory)/blobs", temporaryDirectory: "\(directory)/tmp")
        let upload = try blobs.makeTemporaryFile()
        close(upload.descriptor)
        try zip.write(to: URL(fileURLWithPath: upload.path))
        let sha256 = BundleArchive.sha256(zip)
        try await blobs.commit(temporaryPath: upload.path, sha256: sha256, size: Int64(zip.count))
        let blob = ZipBundleFormat.blobName(sha256: sha256)
        let reader = BundleReader(
            blobs: blobs, maxBytes: 64 << 20, formats: [ZipBundleFormat(limits: IngestLimits(), inspectionMemory: nil)])

        let limit = 1 << 20
        try await reader.withBundle(blob) { (bundle: LocalBundle) throws in
            let (head, isComplete) = try bundle.prefix(of: "logs/app.log.gz", limit: limit, gunzip: true)
            #expect(head.count == limit && !isComplete)
            #expect(head == Data(text.utf8.prefix(limit)))
            #expect(throws: (any Error).self, "the whole archive is damaged, so reading all of it fails") {
                try bundle.lines(of: "logs/app.log.gz")
            }
        }
    }
}
