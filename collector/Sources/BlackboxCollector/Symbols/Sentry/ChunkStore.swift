import BlackboxSystem
import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// The chunks sentry-cli uploads before it asks for a file to be assembled: each is named by the
/// sha1 of its bytes and kept per project in a directory of this instance until it is assembled or an
/// hour old. A project holds at most `maxBytesPerProject` of them (a file being uploaded, at most the
/// largest symbol file allowed) and at most `maxChunksPerProject`. Instances do not share chunks:
/// behind a load balancer, sentry-cli's requests of one upload must reach one instance (docs/sentry.md).
///
/// What each project holds is tallied in memory, read from its directory at its first chunk since the
/// start and again at most once a `sweepInterval`, when expired chunks go: keeping a chunk costs a
/// rename, not a listing of every chunk the project holds (that listing on every keep made a request
/// of many tiny chunks quadratic: security review 2026-11-27, finding 4).
final class ChunkStore: Sendable {
    let directory: String
    let maxBytesPerProject: Int64
    let maxChunksPerProject: Int
    static let lifetime: TimeInterval = 3_600
    static let sweepInterval: TimeInterval = 60

    private struct Holding {
        var bytes: Int64
        var count: Int
        var sweptAt: Date
    }
    private let holdings = Mutex<[Int64: Holding]>([:])

    init(directory: String, maxBytesPerProject: Int64, maxChunksPerProject: Int = 1_024) {
        self.directory = directory
        self.maxBytesPerProject = maxBytesPerProject
        self.maxChunksPerProject = maxChunksPerProject
    }

    enum Refusal: Error {
        case full(limit: Int64)
        case tooMany(limit: Int)
    }

    private func projectDirectory(_ project: Int64) -> String { "\(directory)/\(project)" }

    func path(of sha1: String, project: Int64) -> String { "\(projectDirectory(project))/\(sha1)" }

    func contains(_ sha1: String, project: Int64) -> Bool { access(path(of: sha1, project: project), F_OK) == 0 }

    /// Keeps a verified chunk (written to `temporaryPath` beside the store), unless the project's
    /// chunks would then pass a limit. A chunk the project holds already is kept once.
    func keep(temporaryPath: String, sha1: String, size: Int64, project: Int64) throws {
        let folder = projectDirectory(project)
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let destination = path(of: sha1, project: project)
        try holdings.withLock { holdings in
            let now = Date()
            var holding = holdings[project] ?? Self.sweep(folder, now: now)
            if now.timeIntervalSince(holding.sweptAt) > Self.sweepInterval { holding = Self.sweep(folder, now: now) }
            if access(destination, F_OK) == 0 {
                unlink(temporaryPath)
                holdings[project] = holding
                return
            }
            guard holding.bytes + size <= maxBytesPerProject else { throw Refusal.full(limit: maxBytesPerProject) }
            guard holding.count < maxChunksPerProject else { throw Refusal.tooMany(limit: maxChunksPerProject) }
            guard rename(temporaryPath, destination) == 0 else {
                throw StorageError.io(path: folder, SystemCallError("rename"))
            }
            holding.bytes += size
            holding.count += 1
            holdings[project] = holding
        }
    }

    func remove(_ sha1: [String], project: Int64) {
        holdings.withLock { holdings in
            for chunk in Set(sha1) {
                let path = path(of: chunk, project: project)
                var status = stat()
                guard stat(path, &status) == 0, unlink(path) == 0 else { continue }
                holdings[project]?.bytes -= Int64(status.st_size)
                holdings[project]?.count -= 1
            }
        }
    }

    /// Deletes chunks past their lifetime; what the others hold.
    private static func sweep(_ folder: String, now: Date) -> Holding {
        var holding = Holding(bytes: 0, count: 0, sweptAt: now)
        for name in (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? [] {
            let path = "\(folder)/\(name)"
            var status = stat()
            guard stat(path, &status) == 0 else { continue }
            let modified = Date(timeIntervalSince1970: TimeInterval(status.st_mtim.tv_sec))
            if now.timeIntervalSince(modified) > lifetime {
                unlink(path)
            } else {
                holding.bytes += Int64(status.st_size)
                holding.count += 1
            }
        }
        return holding
    }
}
