import BlackboxTestSupport
import Foundation
import Testing

@testable import Blackbox

/// A journal that start-up cannot trust must never cost lines that are already in the log file.
@Suite struct JournalDamageTests {
    func logAndStop(_ directory: TemporaryDirectory, lines: Range<Int>) throws {
        let core = try LoggingCore(configuration: testConfiguration(directory))
        let handle = core.handle(for: "app")
        for i in lines {
            core.appendText(
                level: .info, label: handle, message: "line \(i)", metadata: EncodedMetadata(), file: "", line: 0)
        }
        core.shutdown()
    }

    func patchHeader(_ directory: TemporaryDirectory, _ body: (_ fd: Int32, _ header: [UInt8]) -> Void) throws {
        let fd = open("\(directory.path)/journal", O_RDWR)
        #expect(fd >= 0)
        defer { close(fd) }
        var header = [UInt8](repeating: 0, count: JournalFile.headerSize)
        #expect(pread(fd, &header, header.count, 0) == header.count)
        body(fd, header)
    }

    @Test("a damaged checkpoint keeps the log file whole instead of cutting it")
    func damagedCheckpoint() throws {
        let directory = TemporaryDirectory()
        try logAndStop(directory, lines: 0..<10)
        try patchHeader(directory) { fd, header in
            let generation = header.withUnsafeBytes {
                $0.loadUnaligned(fromByteOffset: JournalFile.Offset.checkpointGeneration, as: UInt64.self)
            }
            // The size field of the slot in use says 0: trusted, it would cut the whole file.
            var zero: UInt64 = 0
            #expect(pwrite(fd, &zero, 8, off_t(JournalFile.Offset.checkpointSlot(generation) + 24)) == 8)
        }
        try logAndStop(directory, lines: 10..<12)
        let lines = logLines(directory)
        for i in 0..<12 { #expect(lines.contains { $0.hasSuffix("app: line \(i)") }, "line \(i)") }
        #expect(lines.contains { $0.contains("checkpoint was damaged") })
    }

    @Test("a fresh journal carries a valid empty checkpoint: a run that dies before its first checkpoint is no damage")
    func freshJournalIsTrusted() throws {
        let directory = TemporaryDirectory()
        // What a process killed right after start leaves: the journal created, never checkpointed.
        let file = try JournalFile.open(path: "\(directory.path)/journal", capacity: 256 << 10)
        let checkpoint = Journal(file: file).loadCheckpoint()
        file.close()
        #expect(checkpoint.isTrusted && checkpoint.readPosition == 0)
        try logAndStop(directory, lines: 0..<2)
        let lines = logLines(directory)
        #expect(!lines.contains { $0.contains("checkpoint was damaged") }, "\(lines)")
        #expect(lines.filter { $0.contains("app: line") }.count == 2)
    }

    @Test("a journal of the previous format is recovered, then replaced by the current one")
    func previousFormatIsRecovered() throws {
        let directory = TemporaryDirectory()
        try logAndStop(directory, lines: 0..<3)
        try patchHeader(directory) { fd, _ in
            var one: UInt32 = 1
            #expect(pwrite(fd, &one, 4, off_t(JournalFile.Offset.version)) == 4)
        }
        try logAndStop(directory, lines: 3..<5)
        #expect(logLines(directory).filter { $0.contains("app: line") }.count == 5)
        try patchHeader(directory) { _, header in
            let version = header.withUnsafeBytes {
                $0.loadUnaligned(fromByteOffset: JournalFile.Offset.version, as: UInt32.self)
            }
            #expect(version == JournalFile.version)
        }
    }

    @Test("a journal written by a newer Blackbox is kept aside, not overwritten")
    func newerFormatIsKeptAside() throws {
        let directory = TemporaryDirectory()
        var bytes = [UInt8](repeating: 7, count: JournalFile.headerSize + (64 << 10))
        bytes.withUnsafeMutableBytes {
            $0.storeBytes(of: JournalFile.magic, toByteOffset: 0, as: UInt64.self)
            $0.storeBytes(of: UInt32(99), toByteOffset: JournalFile.Offset.version, as: UInt32.self)
        }
        try Data(bytes).write(to: URL(fileURLWithPath: "\(directory.path)/journal"))
        try logAndStop(directory, lines: 0..<2)
        #expect(logLines(directory).filter { $0.contains("app: line") }.count == 2)
        let aside = try #require(
            try FileManager.default.contentsOfDirectory(atPath: directory.path).first { $0.hasPrefix("journal.v99-") })
        #expect(FileManager.default.contents(atPath: "\(directory.path)/\(aside)") == Data(bytes))
        let inspected = #expect(throws: BlackboxError.self) {
            try JournalInspector.pendingLines(path: "\(directory.path)/\(aside)")
        }
        #expect("\(inspected.map { "\($0)" } ?? "")".contains("newer Blackbox"))
    }
}
