import BlackboxFormat
import Foundation

/// A small, valid bundle (manifest, one crash report, one log file) written next to the data on first
/// start, so the printed curl command works at once. Its report is an example, and says so.
public enum ExampleBundle {
    public static func write(to path: String) throws {
        var report = CrashReport(
            kind: .crash, app: .init(name: "example-app", version: "1.0", build: "1"),
            host: .init(name: "example-host", os: "Linux", kernel: "Linux", architecture: "x86_64"),
            process: .init(pid: 4242, path: "/usr/local/bin/example-app", crashTime: Date()),
            thread: .init(id: 4242, name: "main"))
        report.signal = .init(
            number: 4, name: "SIGILL", code: 2, codeName: "ILL_ILLOPN", faultAddress: "0x55d0c0de1234")
        report.reason = "Swift runtime failure: Index out of range"
        report.frameSource = "libunwind"
        report.symbolicated = true
        report.images = [
            .init(
                path: "/usr/local/bin/example-app", bias: "0x55d0c0de0000", start: "0x55d0c0de0000",
                end: "0x55d0c0e00000", buildID: "00112233445566778899aabbccddeeff00112233")
        ]
        report.frames = [
            .init(
                index: 0, address: "0x55d0c0de1234", imageIndex: 0, imageOffset: "0x1234",
                symbols: [
                    .init(function: "Swift runtime failure: Index out of range", inlined: true),
                    .init(
                        function: "example_app.Cart.item(at: Swift.Int) -> example_app.Item",
                        file: "Sources/example-app/Cart.swift", line: 42),
                ]),
            .init(
                index: 1, address: "0x55d0c0de2345", imageIndex: 0, imageOffset: "0x2345",
                symbols: [
                    .init(function: "example_app.checkout() -> ()", file: "Sources/example-app/main.swift", line: 7)
                ]),
        ]
        report.logTail = ["2026-01-01T00:00:00.000Z INFO  checkout: starting checkout (main.swift:6)"]
        report.notes = ["an example report written by the collector on first start"]
        let log = Data("2026-01-01T00:00:00.000Z INFO  checkout: starting checkout (main.swift:6)\n".utf8)
        let data = try BundleArchive.make(
            app: report.app, host: "example-host", reports: [report], logs: [("example-app.log", log)])
        try data.write(to: URL(fileURLWithPath: path), options: .atomic)
    }
}
