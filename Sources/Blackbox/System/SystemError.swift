import BlackboxSystem

#if canImport(Glibc)
    import Glibc
#endif

/// A system call that failed, with the errno it left: a caller can tell a full disk (`ENOSPC`) from a
/// permission problem (`EACCES`) without reading text. Modelled on swift-nio's `IOError`, which
/// keeps `errnoCode` the same way.
public struct SystemError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The call, as a C programmer would name it: `open`, `ftruncate`, `mmap`.
    public let operation: String
    public let path: String?
    public let errno: Int32

    /// The failure of `operation` that just happened (reads `errno` now: create it right after the call).
    public init(_ operation: String, path: String? = nil, errno: Int32 = Glibc.errno) {
        self.operation = operation
        self.path = path
        self.errno = errno
    }

    /// `strerror`'s text, without the call: what a person reads in a sentence.
    public var reason: String { errnoDescription(errno) }

    public var description: String { "\(operation)\(path.map { " \($0)" } ?? ""): \(reason) (errno \(errno))" }
}
