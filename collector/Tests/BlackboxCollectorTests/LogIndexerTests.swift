import Foundation
import Testing

@testable import BlackboxCollector

@Suite("Log indexer")
struct LogIndexerTests {
    @Test("lines are split on newlines and cut at the limit; a last line without a newline is kept")
    func lineSplitting() {
        func lines(_ text: String, max: Int = 100) -> [String] {
            Array(text.utf8).withUnsafeBytes { BundleReader.lines(in: $0, maxLineBytes: max) }
        }
        #expect(lines("") == [])
        #expect(lines("\n") == [""])
        #expect(lines("a\nb\n") == ["a", "b"])
        #expect(lines("a\n\nb") == ["a", "", "b"])
        #expect(lines("abcdef\nxy", max: 3) == ["abc", "xy"])
        #expect(lines("héllo\nwörld\n") == ["héllo", "wörld"])
    }

    @Test("while uploads are in flight the indexer waits, but never longer than its limit")
    func stepsBackForIngest() async throws {
        let directory = NSTemporaryDirectory() + "indexer-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store = try SQLiteStore(path: "\(directory)/collector.sqlite")
        try await store.migrate()
        let project = try await store.createProject(name: "p").id
        _ = try await store.index([StoreContractTests.newBundle(project: project, logs: 2)])
        let blobs = try BlobStore(root: "\(directory)/blobs", temporaryDirectory: "\(directory)/tmp")
        let indexer = LogIndexer(
            store: store, reader: BundleReader(blobs: blobs, maxBytes: 1 << 20), maxDeferral: .milliseconds(500))

        indexer.noteUpload(started: true)  // in flight for as long as the indexer runs
        let started = ContinuousClock.now
        await indexer.indexPending()
        #expect(ContinuousClock.now - started >= .milliseconds(500))
        // The blobs do not exist: the files are marked indexed with no lines, so they cannot stall it.
        #expect(try await store.unindexedLogFiles(limit: 10).isEmpty)

        indexer.noteUpload(started: false)
        _ = try await store.index([StoreContractTests.newBundle(project: project, logs: 1)])
        await indexer.indexPending()
        #expect(try await store.unindexedLogFiles(limit: 10).isEmpty)
    }
}
