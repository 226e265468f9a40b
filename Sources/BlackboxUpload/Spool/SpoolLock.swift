#if Upload
    import Foundation

    /// One uploader per spool at a time (the app's background uploader and `blackbox upload` on the
    /// same directory): an exclusive `flock` on `<spool>/.lock`, released when the value is dropped or
    /// the process dies.
    public final class SpoolLock: Sendable {
        private let descriptor: Int32

        /// Nil when another process holds the lock (or the spool cannot be created).
        public init?(spool: Spool) {
            try? FileManager.default.createDirectory(
                atPath: spool.directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            let fd = open("\(spool.directory)/.lock", O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
            guard fd >= 0 else { return nil }
            guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
                close(fd)
                return nil
            }
            descriptor = fd
        }

        deinit {
            flock(descriptor, LOCK_UN)
            close(descriptor)
        }
    }
#endif
