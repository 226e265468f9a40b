#if Upload
    import BlackboxFormat
    import BlackboxTestSupport
    import Foundation

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
        static func outboxReport(in scratch: TemporaryDirectory, kind: CrashReport.Kind = .crash) throws -> String {
            let report = report(kind: kind)
            let base = "outbox/\(kind.rawValue)-\(report.id.uuidString.lowercased())"
            scratch.write(base + ".txt", report.textRendering)
            return scratch.write(base + ".json", try CrashReport.makeEncoder().encode(report))
        }
    }
#endif
