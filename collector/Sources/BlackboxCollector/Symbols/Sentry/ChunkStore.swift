import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// The chunks sentry-cli uploads before it asks for a file to be assembled: each is named by the
/// sha1 of its bytes and kept per project in a directory of this instance until it is assembled or an
/// hour old. A project holds at most `maxBytesPerProject` of them (a file being uploaded, at most the
/// largest symbol file allowed). Instances do not share chunks: behind a load balancer, sentry-cli's
/// requests of one upload must reach one instance (docs/sentry.md).
struct ChunkStore: Sendable {
    let directory: String
    let maxBytesPerProject: Int64
    static let lifetime: TimeInterval = 3_600

    enum Refusal: Error {
        case full(limit: Int64)
    }

    private func projectDirectory(_ project: Int64) -> String { "\(directory)/\(project)" }

    func path(of sha1: String, project: Int64) -> String { "\(projectDirectory(project))/\(sha1)" }

    func contains(_ sha1: String, project: Int64) -> Bool { access(path(of: sha1, project: project), F_OK) == 0 }

    /// Keeps a verified chunk (written to `temporaryPath` beside the store), unless the project's
    /// chunks would then pass the limit. Old chunks are swept first.
    func keep(temporaryPath: String, sha1: String, size: Int64, project: Int64) throws {
        let folder = projectDirectory(project)
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let held = sweep(folder)
        guard held + size <= maxBytesPerProject else { throw Refusal.full(limit: maxBytesPerProject) }
        guard rename(temporaryPath, path(of: sha1, project: project)) == 0 else {
            throw StorageError.io(path: folder, reason: String(cString: strerror(errno)))
        }
    }

    func remove(_ sha1: [String], project: Int64) {
        for chunk in sha1 { unlink(path(of: chunk, project: project)) }
    }

    /// Deletes chunks past their lifetime; returns the bytes the others hold.
    private func sweep(_ folder: String) -> Int64 {
        let now = Date()
        var held: Int64 = 0
        for name in (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? [] {
            let path = "\(folder)/\(name)"
            guard let attributes = try? FileManager.default.attributesOfItem(atPath: path) else { continue }
            let modified = attributes[.modificationDate] as? Date ?? now
            if now.timeIntervalSince(modified) > Self.lifetime {
                unlink(path)
            } else {
                held += (attributes[.size] as? Int64) ?? Int64(attributes[.size] as? Int ?? 0)
            }
        }
        return held
    }
}
