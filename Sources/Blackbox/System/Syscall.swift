#if canImport(Glibc)
    import Glibc
#endif

// The system calls only the library wraps in more than one place; the ones every module shares
// (EINTR, whole writes) are in `BlackboxSystem`.

/// The size of the file at `path` (following links), 0 when it cannot be read.
func fileSize(_ path: String) -> UInt64 {
    var st = stat()
    return stat(path, &st) == 0 ? UInt64(st.st_size) : 0
}
