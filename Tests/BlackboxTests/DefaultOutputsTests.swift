import BlackboxTestSupport
import Foundation
import Testing

@testable import Blackbox

/// Where lines go when the app says nothing: the file always, and one stream a person or a container
/// platform reads.
@Suite("Default outputs")
struct DefaultOutputsTests {
    @Test("every build: the file, plus text on a terminal's stderr or JSON Lines on stdout; BLACKBOX_CONSOLE chooses")
    func defaults() {
        #expect(Sinks.defaults(console: nil, standardErrorIsTerminal: true) == [.file, .console])
        #expect(Sinks.defaults(console: nil, standardErrorIsTerminal: false) == [.file, .standardOutput])
        #expect(Sinks.defaults(console: "text", standardErrorIsTerminal: false) == [.file, .console])
        #expect(Sinks.defaults(console: "json", standardErrorIsTerminal: true) == [.file, .standardOutput])
        #expect(Sinks.defaults(console: "off", standardErrorIsTerminal: true) == [.file])
        #expect(Sinks.defaults(console: "loud", standardErrorIsTerminal: true) == [.file, .console])
    }

    @Test(
        "a child started without a terminal writes its line to stdout as JSON and to the log file; the run record names both"
    )
    func childWithoutTerminal() throws {
        let directory = TemporaryDirectory()
        let result = try runChild("blackbox-test-child", ["default-outputs", directory.path])
        #expect(result.status == 0, "\(result.stderr)")
        let json = result.stdout.split(separator: "\n").first { $0.contains("default outputs line") }
        #expect(json?.hasPrefix("{") == true, "stdout: \(result.stdout)")
        #expect(logLines(directory, base: "child").contains { $0.contains("defaults: default outputs line") })
        #expect(result.stdout.contains("outputs: file, stdout (JSON Lines)"), "\(result.stdout)")
    }
}
