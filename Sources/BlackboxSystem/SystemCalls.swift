#if canImport(Glibc)
    import Glibc
#endif

// The system-call floor of every Blackbox module (the library, the symbols reader, the uploader and
// the collector), written once, as swift-nio keeps its own in one `System.swift`: a call retried on
// EINTR, a write that finishes, and an error that keeps errno.

/// `call` again while it fails with EINTR (returns -1 with errno EINTR); its last result, errno
/// kept on failure.
@inlinable
public func retryingEINTR<Result: BinaryInteger>(_ call: () -> Result) -> Result {
    while true {
        let result = call()
        if result == -1 && errno == EINTR { continue }
        return result
    }
}

/// write(2) until all `count` bytes are written; false with errno set on error (EIO for a write
/// that wrote nothing).
public func writeFully(_ fd: Int32, _ bytes: UnsafeRawPointer?, _ count: Int) -> Bool {
    guard var pointer = bytes else { return count == 0 }
    var remaining = count
    while remaining > 0 {
        let written = retryingEINTR { write(fd, pointer, remaining) }
        if written < 0 { return false }
        if written == 0 {
            errno = EIO
            return false
        }
        pointer += written
        remaining -= written
    }
    return true
}

/// A system call that failed, with its errno (so a caller can tell ENOSPC from EACCES) and what it
/// was called on.
public struct SystemCallError: Error, Hashable, CustomStringConvertible {
    /// The call's name: `open`, `write`, `syncfs`…
    public var call: String
    public var errno: Int32

    /// The failure of `call`, with the errno of the current thread.
    public init(_ call: String, errno: Int32 = Glibc.errno) {
        self.call = call
        self.errno = errno
    }

    public var description: String { "\(call): \(errnoDescription(errno))" }
}

/// The text of an errno value (`strerror`), for messages; by default the current thread's.
public func errnoDescription(_ code: Int32 = Glibc.errno) -> String {
    String(cString: strerror(code))
}
