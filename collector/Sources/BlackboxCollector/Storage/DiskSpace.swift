#if canImport(Glibc)
    import Glibc
#endif

/// Free space where the collector writes, so that a nearly full disk refuses new uploads (clients
/// resend later) and turns `/ready` red, instead of failing writes half-way.
enum DiskSpace {
    /// Bytes an unprivileged writer can still use on the file system holding `path`; nil when it
    /// cannot be read.
    static func available(at path: String) -> Int64? {
        var info = statvfs()
        guard statvfs(path, &info) == 0 else { return nil }
        return Int64(info.f_bavail) * Int64(info.f_frsize)
    }
}
