#if Tools
    import Foundation

    /// A one-line progress bar on stderr, redrawn in place; only when stderr is a terminal.
    final class ProgressBar: @unchecked Sendable {
        private let lock = NSLock()
        private var lastDraw = Date.distantPast
        let enabled: Bool

        init(enabled: Bool = isatty(2) == 1) { self.enabled = enabled }

        func update(label: String, sent: Int64, total: Int64) {
            guard enabled else { return }
            lock.lock()
            defer { lock.unlock() }
            let now = Date()
            guard sent >= total || now.timeIntervalSince(lastDraw) > 0.1 else { return }
            lastDraw = now
            let fraction = total > 0 ? Double(sent) / Double(total) : 1
            let width = 30
            let filled = Int(fraction * Double(width))
            let bar = String(repeating: "#", count: filled) + String(repeating: " ", count: width - filled)
            let line = String(
                format: "\r%@ [%@] %3d%% %.1f/%.1f MB", label, bar, Int(fraction * 100), Double(sent) / 1e6,
                Double(total) / 1e6)
            FileHandle.standardError.write(Data(line.utf8))
        }

        func finishLine() {
            guard enabled else { return }
            FileHandle.standardError.write(Data("\r\u{1B}[K".utf8))
        }
    }
#endif
