import BlackboxSystem

#if canImport(Glibc)
    import Glibc
#endif

/// Whole-file writes that are either absent or complete after a crash or power loss: a temporary
/// file in the same directory, fsync, rename over the destination, fsync of the directory.
/// Public for the other Blackbox modules (the uploader's spool and ledger), not as app API.
package enum DurableFile {
    public struct Failure: Error, CustomStringConvertible {
        public var path: String
        public var reason: String
        /// The system call that failed, with its errno, when one did.
        public var underlying: SystemError?
        public var description: String { "\(path): \(reason)" }

        public init(path: String, reason: String) {
            self.path = path
            self.reason = reason
        }

        init(_ failure: SystemError) {
            self.path = failure.path ?? ""
            self.reason = failure.reason
            self.underlying = failure
        }
    }

    public static func write(_ bytes: [UInt8], to path: String, mode: mode_t = 0o600) throws(Failure) {
        let temporary = path + ".tmp"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, mode)
        guard fd >= 0 else { throw Failure(SystemError("open", path: temporary)) }
        let written = bytes.withUnsafeBytes { writeFully(fd, $0.baseAddress, $0.count) }
        let synced = written && fsync(fd) == 0
        let failure = SystemError(written ? "fsync" : "write", path: temporary)
        close(fd)
        guard synced else {
            unlink(temporary)
            throw Failure(failure)
        }
        guard rename(temporary, path) == 0 else {
            let failure = SystemError("rename", path: path)
            unlink(temporary)
            throw Failure(failure)
        }
        syncDirectory(containing: path)
    }

    /// Makes a finished `temporary` file (written by someone else, in the same directory) durable
    /// under `path`: fsync, rename, fsync of the directory.
    public static func commit(_ temporary: String, to path: String) throws(Failure) {
        let fd = open(temporary, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw Failure(SystemError("open", path: temporary)) }
        let synced = fsync(fd) == 0
        let failure = SystemError("fsync", path: temporary)
        close(fd)
        guard synced else { throw Failure(failure) }
        guard rename(temporary, path) == 0 else { throw Failure(SystemError("rename", path: path)) }
        syncDirectory(containing: path)
    }

    public static func syncDirectory(containing path: String) {
        let directory = path.split(separator: "/", omittingEmptySubsequences: false).dropLast().joined(separator: "/")
        let fd = open(directory.isEmpty ? "." : directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if fd >= 0 {
            fsync(fd)
            close(fd)
        }
    }

    public static func read(_ path: String, limit: Int = 64 << 20) -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while bytes.count < limit {
            let n = retryingEINTR { chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) } }
            if n < 0 { return nil }
            if n == 0 { break }
            bytes.append(contentsOf: chunk[0..<n])
        }
        return bytes
    }
}
