import Synchronization
import Testing

@testable import BlackboxCollector

/// The quota's usage figure is read by one upload at a time, never by every upload that finds it old.
@Suite("Project usage for the bundle quota")
struct ProjectUsageTests {
    /// A store whose sum does not answer while the test holds it, counting how often it is asked.
    final class HeldStore: UsageStore, Sendable {
        let reads = Atomic<Int>(0)
        let bytes = Atomic<Int64>(1_000)
        let held = Atomic<Bool>(false)

        func bundleBytes(projectID: Int64) async throws -> Int64 {
            reads.add(1, ordering: .relaxed)
            while held.load(ordering: .relaxed) { try await Task.sleep(for: .milliseconds(1)) }
            return bytes.load(ordering: .relaxed)
        }

        func symbolUsage(projectID: Int64) async throws -> SymbolUsage { SymbolUsage(files: 0, bytes: 0) }
    }

    @Test("within its age the figure is not read again; a stored bundle counts at once")
    func cachedAndCounted() async throws {
        let store = HeldStore()
        let usage = ProjectUsage(store: store, maxAge: .seconds(60))
        #expect(try await usage.bundleBytes(of: 1) == 1_000)
        usage.stored(500, in: 1)
        #expect(try await usage.bundleBytes(of: 1) == 1_500)
        #expect(store.reads.load(ordering: .relaxed) == 1)
    }

    @Test(
        "when the figure is old, one upload reads it again and 63 others go on with the old one meanwhile",
        .timeLimit(.minutes(1)))
    func oneReaderAtATime() async throws {
        let store = HeldStore()
        let usage = ProjectUsage(store: store, maxAge: .milliseconds(10))
        #expect(try await usage.bundleBytes(of: 7) == 1_000)
        try await Task.sleep(for: .milliseconds(20))
        store.bytes.store(2_000, ordering: .relaxed)
        store.held.store(true, ordering: .relaxed)
        let reader = Task { try await usage.bundleBytes(of: 7) }
        // The reader has taken the turn; the others arrive while its read cannot finish.
        while store.reads.load(ordering: .relaxed) < 2 { try await Task.sleep(for: .milliseconds(1)) }
        let others = try await withThrowingTaskGroup(of: Int64.self) { group in
            for _ in 0..<63 { group.addTask { try await usage.bundleBytes(of: 7) } }
            return try await group.reduce(into: [Int64]()) { $0.append($1) }
        }
        #expect(others.count == 63 && others.allSatisfy { $0 == 1_000 }, "they went on with the old figure")
        store.held.store(false, ordering: .relaxed)
        #expect(try await reader.value == 2_000)
        #expect(store.reads.load(ordering: .relaxed) == 2)
        #expect(try await usage.bundleBytes(of: 7) == 2_000)
    }
}
