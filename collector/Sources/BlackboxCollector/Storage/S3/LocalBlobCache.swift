import BlackboxSystem
import Foundation
import Synchronization

/// Local copies of blobs from an object store, for readers that need a file (a zip's directory, the
/// symbolizer's ELF file, a download). A folder the collector owns (`<data-dir>/cache`): cleared at
/// start and safe to delete at any time. A copy is in use while a reader's `withFile` runs; copies in
/// use are never removed, the least recently used of the others go once the folder holds more than
/// `maxBytes`.
final class LocalBlobCache: Sendable {
    let directory: String
    let maxBytes: Int64

    private struct Entry {
        var size: Int64
        var readers = 0
        var lastUse: UInt64
    }

    private struct State {
        var entries: [String: Entry] = [:]
        var totalBytes: Int64 = 0
        var clock: UInt64 = 0
    }

    private let state = Mutex(State())

    init(directory: String, maxBytes: Int64) throws {
        self.directory = directory
        self.maxBytes = maxBytes
        try? FileManager.default.removeItem(atPath: directory)
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    }

    /// The cached copy's path for a blob name (`ab/ab12….zip` → `ab-ab12….zip`).
    func path(of blob: String) -> String { "\(directory)/\(blob.replacingOccurrences(of: "/", with: "-"))" }

    /// Runs `body` with the blob's local copy, fetched by `fetch` (into the path it is given) when
    /// there is none. The copy is not removed while `body` runs.
    func withFile<Result>(
        of blob: String, fetch: (String) async throws -> Int64, _ body: (String) async throws -> Result
    ) async throws -> Result {
        let path = path(of: blob)
        // The folder is safe to delete at any time: a copy that went is fetched again.
        let present = access(path, F_OK) == 0
        let cached = state.withLock { state -> Bool in
            state.clock += 1
            guard present, var entry = state.entries[blob] else { return false }
            entry.readers += 1
            entry.lastUse = state.clock
            state.entries[blob] = entry
            return true
        }
        if !cached {
            // Fetched under a name of its own, then renamed: a reader never opens a partial copy, and two
            // readers fetching the same blob at once each finish (the second rename replaces an equal file).
            var random = SystemRandomNumberGenerator()
            let partial = "\(path).partial-\(String(random.next() as UInt64, radix: 16))"
            let size: Int64
            do {
                if mkdir(directory, 0o700) != 0 && errno != EEXIST {
                    throw StorageError.io(path: directory, SystemCallError("mkdir"))
                }
                size = try await fetch(partial)
                guard rename(partial, path) == 0 else { throw StorageError.io(path: path, SystemCallError("rename")) }
            } catch {
                unlink(partial)
                throw error
            }
            state.withLock { state in
                state.clock += 1
                var entry = state.entries[blob] ?? Entry(size: 0, lastUse: 0)
                if state.entries[blob] == nil {
                    entry.size = size
                    state.totalBytes += size
                }
                entry.readers += 1
                entry.lastUse = state.clock
                state.entries[blob] = entry
            }
        }
        defer {
            let evicted = state.withLock { state -> [String] in
                state.entries[blob]?.readers -= 1
                return Self.evictions(&state, maxBytes: maxBytes)
            }
            for name in evicted { unlink(self.path(of: name)) }
        }
        return try await body(path)
    }

    /// Forgets a blob's copy (its blob was deleted); a copy in use goes once its readers are done.
    func remove(_ blob: String) {
        let removed = state.withLock { state -> Bool in
            guard let entry = state.entries[blob], entry.readers == 0 else { return false }
            state.totalBytes -= entry.size
            state.entries[blob] = nil
            return true
        }
        if removed { unlink(path(of: blob)) }
    }

    /// Least recently used copies not in use, until the rest fit in `maxBytes`.
    private static func evictions(_ state: inout State, maxBytes: Int64) -> [String] {
        guard state.totalBytes > maxBytes else { return [] }
        var evicted: [String] = []
        for (name, entry) in state.entries.filter({ $0.value.readers == 0 }).sorted(by: {
            $0.value.lastUse < $1.value.lastUse
        }) {
            guard state.totalBytes > maxBytes else { break }
            state.totalBytes -= entry.size
            state.entries[name] = nil
            evicted.append(name)
        }
        return evicted
    }

    /// Bytes the cached copies take.
    var bytes: Int64 { state.withLock { $0.totalBytes } }
}
