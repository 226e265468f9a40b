import BlackboxTestSupport
import Foundation
import Logging
import ServiceLifecycle
import Testing

@testable import BlackboxCollector

@Suite("Log indexer")
struct LogIndexerTests {
    @Test("lines are split on newlines and cut at the limit; a last line without a newline is kept")
    func lineSplitting() {
        func lines(_ text: String, max: Int = 100) -> [String] {
            Array(text.utf8).withUnsafeBytes { LocalBundle.lines(in: $0, maxLineBytes: max) }
        }
        #expect(lines("") == [])
        #expect(lines("\n") == [""])
        #expect(lines("a\nb\n") == ["a", "b"])
        #expect(lines("a\n\nb") == ["a", "", "b"])
        #expect(lines("abcdef\nxy", max: 3) == ["abc", "xy"])
        #expect(lines("héllo\nwörld\n") == ["héllo", "wörld"])
    }

    /// A SQLite store holding one bundle with two log files whose blobs do not exist, and an indexer
    /// over it.
    struct Fixture {
        let scratch = TemporaryDirectory(prefix: "indexer")
        var directory: String { scratch.path }
        let store: SQLiteStore
        let project: Int64
        let indexer: LogIndexer
        let activity = IngestActivity()

        init(maxDeferral: Duration) async throws {
            store = try SQLiteStore(path: "\(scratch.path)/collector.sqlite")
            try await store.migrate()
            project = try await store.createProject(name: "p").id
            _ = try await store.index([StoreContractTests.newBundle(project: project, logs: 2)])
            let blobs = try DirectoryBlobStore(root: "\(scratch.path)/blobs", temporaryDirectory: "\(scratch.path)/tmp")
            indexer = LogIndexer(
                store: store,
                reader: BundleReader(
                    blobs: blobs, maxBytes: 1 << 20,
                    formats: [ZipBundleFormat(limits: IngestLimits(), inspectionMemory: nil)]), activity: activity,
                maxDeferral: maxDeferral)
        }

        func remove() { scratch.remove() }
    }

    @Test("while uploads are in flight the indexer waits, but never longer than its limit")
    func stepsBackForIngest() async throws {
        let fixture = try await Fixture(maxDeferral: .milliseconds(500))
        defer { fixture.remove() }
        let (store, project, indexer, activity) = (fixture.store, fixture.project, fixture.indexer, fixture.activity)

        activity.noteUpload(started: true)  // in flight for as long as the indexer runs
        let started = ContinuousClock.now
        await indexer.indexPending()
        #expect(ContinuousClock.now - started >= .milliseconds(500))
        // The blobs do not exist: the files are marked indexed with no lines, so they cannot stall it.
        #expect(try await store.unindexedLogFiles(limit: 10).isEmpty)

        activity.noteUpload(started: false)
        _ = try await store.index([StoreContractTests.newBundle(project: project, logs: 1)])
        await indexer.indexPending()
        #expect(try await store.unindexedLogFiles(limit: 10).isEmpty)
    }

    @Test("graceful shutdown stops the indexer without working through its backlog")
    func stopsOnShutdown() async throws {
        // An upload stays in flight, so the indexer waits (up to 20 s) before indexing its backlog.
        let fixture = try await Fixture(maxDeferral: .seconds(20))
        defer { fixture.remove() }
        fixture.activity.noteUpload(started: true)
        let group = ServiceGroup(
            configuration: .init(services: [fixture.indexer], logger: Logger(label: "test"))
        )
        let stopped = try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            try await Task.sleep(for: .milliseconds(300))
            let asked = ContinuousClock.now
            await group.triggerGracefulShutdown()
            try await tasks.waitForAll()
            return ContinuousClock.now - asked
        }
        // It stopped while waiting, not after it: the backlog is still queued for the next run.
        #expect(stopped < .seconds(20))
        #expect(try await fixture.store.unindexedLogFiles(limit: 10).count == 2)
    }
}
