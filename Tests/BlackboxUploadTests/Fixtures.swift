import BlackboxFormat
import Foundation

/// Temporary directories and files for the upload tests, removed by `remove()`.
struct Scratch {
    let path: String

    init() {
        path = NSTemporaryDirectory() + "blackbox-upload-test-\(UUID().uuidString)"
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    @discardableResult
    func write(_ relative: String, _ text: String) -> String {
        write(relative, Data(text.utf8))
    }

    @discardableResult
    func write(_ relative: String, _ data: Data) -> String {
        let full = "\(path)/\(relative)"
        try? FileManager.default.createDirectory(
            atPath: URL(fileURLWithPath: full).deletingLastPathComponent().path, withIntermediateDirectories: true)
        _ = FileManager.default.createFile(atPath: full, contents: data)
        return full
    }

    func files(in relative: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: "\(path)/\(relative)")) ?? []).sorted()
    }

    func remove() { try? FileManager.default.removeItem(atPath: path) }
}

enum Fixtures {
    static func report(kind: CrashReport.Kind = .crash, app: String = "shop") -> CrashReport {
        var report = CrashReport(
            kind: kind, app: .init(name: app, version: "1.2", build: "7"),
            host: .init(name: "web-1", os: "Debian GNU/Linux 12", kernel: "6.1", architecture: "x86_64"),
            process: .init(pid: 42, path: "/usr/bin/\(app)", startTime: Date(), crashTime: Date()),
            thread: .init(id: 42, name: "main"))
        report.reason = "Fatal error: test"
        return report
    }

    /// Writes a report to `<dir>/outbox/` the way the library does (JSON and text).
    @discardableResult
    static func outboxReport(in scratch: Scratch, kind: CrashReport.Kind = .crash) throws -> String {
        let report = report(kind: kind)
        let base = "outbox/\(kind.rawValue)-\(report.id.uuidString.lowercased())"
        scratch.write(base + ".txt", report.textRendering)
        return scratch.write(base + ".json", try CrashReport.makeEncoder().encode(report))
    }
}
