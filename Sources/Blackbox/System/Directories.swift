#if canImport(Glibc)
    import Glibc
#endif

/// Creates `path` and its missing parents (mode 0700), and makes sure the directory can be trusted
/// with logs and reports, which hold personal data: it must be a directory owned by this user, and
/// when `path` itself is a symbolic link, the link must be this user's too (one planted by another
/// user, e.g. in a shared /tmp, is refused rather than followed).
///
/// No directory on the way may be writable by every user unless it is sticky (as /tmp is): anyone
/// could rename an entry of it and put a directory or link of theirs in its place later (a
/// `/var/tmp/blackbox-<uid>` made 0777 by another user first, for the fallback directory).
func makeDirectory(_ path: String) throws(BlackboxError) {
    var current = path.hasPrefix("/") ? "" : "."
    for component in path.split(separator: "/") {
        current += "/\(component)"
        if mkdir(current, 0o700) != 0 && errno != EEXIST {
            throw .directoryUnavailable(path: current, SystemError("mkdir", path: current))
        }
        var status = stat()
        if current != path, stat(current, &status) == 0, status.st_mode & S_IWOTH != 0, status.st_mode & S_ISVTX == 0 {
            throw .directoryUnavailable(
                path: path,
                reason:
                    "\(current) is writable by every user and not sticky: another user could replace what is in it")
        }
    }
    try checkOwnDirectory(path)
}

/// Refuses a directory (or a link to one) that another user owns; see `makeDirectory`.
func checkOwnDirectory(_ path: String) throws(BlackboxError) {
    let user = geteuid()
    var link = stat()
    guard lstat(path, &link) == 0 else { throw .directoryUnavailable(path: path, SystemError("lstat", path: path)) }
    if (link.st_mode & S_IFMT) == S_IFLNK, link.st_uid != user {
        throw .directoryUnavailable(
            path: path, reason: "a symbolic link owned by uid \(link.st_uid), not by this user (uid \(user))")
    }
    var target = stat()
    guard stat(path, &target) == 0, (target.st_mode & S_IFMT) == S_IFDIR else {
        throw .directoryUnavailable(path: path, reason: "not a directory")
    }
    guard target.st_uid == user else {
        throw .directoryUnavailable(path: path, reason: "owned by uid \(target.st_uid), not by this user (uid \(user))")
    }
}

/// The user's home directory: `HOME` when it is an absolute path, else the password database's
/// entry; nil when neither says (never a shared directory such as /tmp).
func homeDirectory() -> String? {
    if let home = getenv("HOME").map({ String(cString: $0) }), home.hasPrefix("/") { return home }
    var entry = passwd()
    var result: UnsafeMutablePointer<passwd>?
    var buffer = [CChar](repeating: 0, count: 4096)
    guard getpwuid_r(geteuid(), &entry, &buffer, buffer.count, &result) == 0, result != nil,
        let directory = entry.pw_dir.map({ String(cString: $0) }), directory.hasPrefix("/")
    else { return nil }
    return directory
}

/// File names in `path` (not `.` and `..`); empty when it cannot be read.
func directoryEntries(_ path: String) -> [String] {
    guard let dir = opendir(path) else { return [] }
    defer { closedir(dir) }
    var names: [String] = []
    while let entry = readdir(dir) {
        let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
            String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
        }
        if name != "." && name != ".." { names.append(name) }
    }
    return names
}
