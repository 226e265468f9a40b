import BlackboxFormat
import Foundation
import Testing

/// `blackbox show` prints `textRendering`: every text a report carries comes from the app or the
/// network, so none of it may forge a line or steer the terminal (security review 2026-11-27).
@Suite("A report's text for a terminal")
struct ReportTextTests {
    @Test("control characters, line breaks and bidirectional overrides in every field are escaped")
    func hostileFields() {
        let hostile = "x\u{1B}[2J\u{07}\u{9B}y\r\nForged: line\u{2028}\u{202E}z\0"
        var report = CrashReport(
            kind: .error, app: .init(name: "shop" + hostile, version: "1" + hostile),
            host: .init(name: "h" + hostile, os: "Linux", kernel: "6", architecture: "x86_64"),
            process: .init(pid: 1, path: "/srv/" + hostile, crashTime: Date(timeIntervalSince1970: 0)),
            thread: .init(id: 1, name: "t" + hostile))
        report.reason = "reason" + hostile
        report.fatalMessage = "first" + hostile + "\nsecond line"
        report.scope = ["route" + hostile: "/a" + hostile]
        report.annotations = ["k": hostile]
        report.metadata = ["m" + hostile: hostile]
        report.logTail = ["line" + hostile]
        report.notes = ["note" + hostile]
        report.images = [.init(path: "/lib/" + hostile, bias: "0x0", start: "0x0", end: "0x10", buildID: nil)]
        report.frames = [
            .init(
                index: 0, address: "0x1", imageIndex: 0, imageOffset: "0x1",
                symbols: [.init(function: "f" + hostile, file: "F" + hostile, line: 1)])
        ]
        let text = report.textRendering
        let forbidden = text.unicodeScalars.filter {
            ($0.value < 0x20 && $0 != "\n") || (0x7F...0x9F).contains($0.value) || [0x2028, 0x202E].contains($0.value)
        }
        #expect(forbidden.isEmpty, "\(forbidden.map { String($0.value, radix: 16) })")
        #expect(!text.contains("\nForged: line"), "a value's line break became a line of its own")
        #expect(text.contains("x\\u{1B}[2J\\u{7}\\u{9B}y\\r\\nForged: line\\u{2028}\\u{202E}z\\u{0}"))
        // The fatal message's own line breaks stay lines: it is several lines by nature.
        #expect(text.contains("\n  second line\n"))
    }
}
