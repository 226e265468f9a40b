import BlackboxTestSupport
import Foundation
import Synchronization
import Testing

@testable import BlackboxCollector

@Suite("Group commit: small bundles never wait behind large ones")
struct GroupCommitterTests {
    /// A store whose transactions for large plans wait until the test opens the gate, so that a batch
    /// of large bundles stays in flight for as long as the test needs.
    final class GatedIndex: BundleIndex {
        private struct State {
            var gateOpen = false
            var waiting: [CheckedContinuation<Void, Never>] = []
            var largeBatchesStarted = 0
            var largeBatchSizes: [Int] = []
        }
        private let state = Mutex(State())

        var largeBatchesStarted: Int { state.withLock { $0.largeBatchesStarted } }
        var largeBatchSizes: [Int] { state.withLock { $0.largeBatchSizes } }

        func openGate() {
            let waiting = state.withLock { state in
                state.gateOpen = true
                defer { state.waiting = [] }
                return state.waiting
            }
            for continuation in waiting { continuation.resume() }
        }

        func existingBundle(projectID: Int64, uploadID: String?, sha256: String) async throws -> BundleRecord? { nil }

        func apply(_ plans: [IngestPlan]) async throws -> [IndexOutcome] {
            if plans.contains(where: { GroupCommitter.Lane($0) == .large }) {
                await withCheckedContinuation { continuation in
                    let mustWait = state.withLock { state in
                        state.largeBatchesStarted += 1
                        state.largeBatchSizes.append(plans.count)
                        if !state.gateOpen { state.waiting.append(continuation) }
                        return !state.gateOpen
                    }
                    if !mustWait { continuation.resume() }
                }
            }
            return plans.enumerated().map { index, plan in
                .stored(
                    BundleRecord(
                        id: Int64(index), projectID: plan.bundle.projectID, uploadID: plan.bundle.uploadID,
                        sha256: plan.bundle.sha256, size: plan.bundle.size, blob: plan.bundle.blob, appName: nil,
                        appVersion: nil, host: nil, hasManifest: false, receivedAt: plan.bundle.receivedAt,
                        fileCount: 0, reportCount: 0))
            }
        }
    }

    /// A plan of `claimedSize` bytes and its temporary file (a few real bytes: the committer flushes
    /// and links it, and only the plan's size decides its lane).
    static func upload(claimedSize: Int64, blobs: DirectoryBlobStore) throws -> (IngestPlan, String) {
        let file = try blobs.makeTemporaryFile()
        close(file.descriptor)
        try Data("bundle".utf8).write(to: URL(fileURLWithPath: file.path))
        let sha256 = UUID().uuidString.lowercased()
        let plan = try IngestPlan(
            NewBundle(
                projectID: 1, uploadID: UUID().uuidString, sha256: sha256, size: claimedSize,
                blob: ZipBundleFormat.blobName(sha256: sha256), manifest: nil, files: [], reports: [],
                receivedAt: Date()), bounds: IngestBounds(IngestLimits()))
        return (plan, file.path)
    }

    @Test("a 10 KB upload is stored while batches of 40 MiB uploads are still in their transactions")
    func smallLaneBypassesLargeBatches() async throws {
        let scratch = TemporaryDirectory(prefix: "committer")
        defer { scratch.remove() }
        let directory = scratch.path
        let blobs = try DirectoryBlobStore(root: "\(directory)/blobs", temporaryDirectory: "\(directory)/tmp")
        let index = GatedIndex()
        let committer = GroupCommitter(store: index, blobs: blobs, window: .zero)
        let running = Task { try await committer.run() }

        var large: [Task<IndexOutcome, any Error>] = []
        for _ in 0..<3 {
            let (plan, path) = try Self.upload(claimedSize: 40 << 20, blobs: blobs)
            large.append(Task { try await committer.submit(plan, temporaryPath: path) })
        }
        let deadline = ContinuousClock.now + .seconds(60)
        while index.largeBatchesStarted == 0 && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(5))
        }
        try #require(index.largeBatchesStarted == 1)

        let (plan, path) = try Self.upload(claimedSize: 10_000, blobs: blobs)
        let small = Task { try await committer.submit(plan, temporaryPath: path) }
        // Either the small upload is answered, or the time runs out with the large ones still gated.
        let answered = await withTaskGroup(of: Bool.self) { group in
            group.addTask { (try? await small.value) != nil }
            group.addTask {
                try? await Task.sleep(for: .seconds(60))
                return false
            }
            let first = await group.next() ?? false
            group.cancelAll()
            return first
        }
        #expect(answered)
        // The large lane keeps one batch in flight, so the other two were still waiting their turn.
        #expect(index.largeBatchesStarted == 1)

        index.openGate()
        for upload in large { _ = try await upload.value }
        // Each 40 MiB bundle went in a batch of its own (a batch holds at most 64 MiB).
        #expect(index.largeBatchSizes == [1, 1, 1])
        running.cancel()
        try await running.value
    }
}
