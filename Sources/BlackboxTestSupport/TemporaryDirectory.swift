import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A private directory for one test (mode 0700, made by `mkdtemp` under `$TMPDIR` or `/tmp`),
/// removed with everything in it by `remove()`, or when the object goes away. The one such helper of
/// both packages' tests.
///
/// A test that only uses `path` should still call `remove()` at its end (`defer`): Swift may release
/// an object right after its last use, and the directory would go with it.
public final class TemporaryDirectory: Sendable {
    public let path: String

    public init(prefix: String = "blackbox-test") {
        // Nearly every test of both packages starts here, and Swift Testing has no process-wide set-up.
        ExecutorWatch.start()
        let base = ProcessInfo.processInfo.environment["TMPDIR"].flatMap { $0.hasPrefix("/") ? $0 : nil } ?? "/tmp"
        var template = Array("\(base)/\(prefix)-XXXXXX".utf8CString)
        let made = template.withUnsafeMutableBufferPointer { buffer in
            buffer.baseAddress.flatMap { mkdtemp($0) }
        }
        if let made {
            path = String(cString: made)
        } else {
            path = "\(base)/\(prefix)-\(UUID().uuidString)"
            try? FileManager.default.createDirectory(
                atPath: path, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        }
    }

    deinit { remove() }

    public func remove() { try? FileManager.default.removeItem(atPath: path) }

    /// Writes `text` to `relative` (directories made as needed); returns the full path.
    @discardableResult
    public func write(_ relative: String, _ text: String) -> String { write(relative, Data(text.utf8)) }

    @discardableResult
    public func write(_ relative: String, _ data: Data) -> String {
        let full = "\(path)/\(relative)"
        try? FileManager.default.createDirectory(
            atPath: URL(fileURLWithPath: full).deletingLastPathComponent().path, withIntermediateDirectories: true)
        _ = FileManager.default.createFile(atPath: full, contents: data)
        return full
    }

    /// The names in `relative`, sorted; empty when it does not exist.
    public func files(in relative: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: "\(path)/\(relative)")) ?? []).sorted()
    }
}
