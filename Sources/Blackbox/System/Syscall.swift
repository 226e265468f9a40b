#if canImport(Glibc)
    import Glibc
#endif

// The system calls the library wraps in more than one place, each written once (swift-nio keeps
// its equivalents in one `System.swift`).

/// write(2) until everything is written or an error occurs; false with errno set on error.
func writeFully(_ fd: Int32, _ bytes: UnsafeRawPointer?, _ count: Int) -> Bool {
    guard var pointer = bytes else { return count == 0 }
    var remaining = count
    while remaining > 0 {
        let n = write(fd, pointer, remaining)
        if n < 0 {
            if errno == EINTR { continue }
            return false
        }
        if n == 0 {
            errno = EIO
            return false
        }
        pointer += n
        remaining -= n
    }
    return true
}

/// The text of an errno value, for messages.
func errnoDescription(_ code: Int32 = errno) -> String {
    String(cString: strerror(code))
}

/// The size of the file at `path` (following links), 0 when it cannot be read.
func fileSize(_ path: String) -> UInt64 {
    var st = stat()
    return stat(path, &st) == 0 ? UInt64(st.st_size) : 0
}
