import BlackboxTestSupport
import Foundation
import Testing

@testable import Blackbox

#if canImport(Glibc)
    import Glibc
#endif

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

    @Test("under systemd's journal stream the stream is the journal's native protocol; BLACKBOX_CONSOLE still chooses")
    func journalStream() {
        #expect(
            Sinks.defaults(console: nil, standardErrorIsTerminal: false, standardStreamIsJournal: true) == [
                .file, .journald,
            ])
        #expect(
            Sinks.defaults(console: "json", standardErrorIsTerminal: false, standardStreamIsJournal: true) == [
                .file, .standardOutput,
            ])
        #expect(Sinks.defaults(console: "journald", standardErrorIsTerminal: true) == [.file, .journald])
    }

    @Test("JOURNAL_STREAM counts only when it names this process's stdout or stderr (device:inode)")
    func journalStreamVariable() {
        var status = stat()
        #expect(fstat(2, &status) == 0)
        #expect(JournalStream.connectsStandardStreams("\(status.st_dev):\(status.st_ino)"))
        #expect(!JournalStream.connectsStandardStreams("\(status.st_dev):\(status.st_ino &+ 1)"))
        #expect(!JournalStream.connectsStandardStreams(nil))
        #expect(!JournalStream.connectsStandardStreams(""))
        #expect(!JournalStream.connectsStandardStreams("12:x"))
        #expect(!JournalStream.connectsStandardStreams("1:2:3"))
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
