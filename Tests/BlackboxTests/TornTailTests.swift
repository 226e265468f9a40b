import BlackboxTestSupport
import Foundation
import Testing

@testable import Blackbox

/// A process killed after its writer's `write(2)` and before the checkpoint that follows it leaves a
/// log file longer than the checkpoint says, possibly ending in a line the kill tore. Recovery cuts
/// the file back and replays; `blackbox logs --journal` must show exactly that result beforehand.
/// This builds that state by hand, cut at every byte of the last line, instead of hoping a random
/// SIGKILL lands there (the random test is `CLITests.logsJournal`).
@Suite struct TornTailTests {
    static let acknowledged = (0..<5).map { "acknowledged line \($0)" }
    static let unacknowledged = (0..<4).map { "written after the checkpoint \($0)" }

    /// Builds the killed process's journal and log file in `directory`; returns the checkpoint's file
    /// size and the size with the whole unacknowledged batch written.
    func leaveKilledState(in directory: TemporaryDirectory) throws -> (checkpoint: UInt64, written: UInt64) {
        try FileManager.default.createDirectory(atPath: directory.logs, withIntermediateDirectories: true)
        let file = try JournalFile.open(path: "\(directory.path)/journal", capacity: 256 << 10)
        defer { file.close() }
        let journal = Journal(file: file)
        let sink = try LogFileSink(directory: directory.logs, baseName: "test", checkpoint: nil, now: 0)
        var formatter = LineFormatter(format: .text)

        func writeBatch(_ texts: [String]) throws {
            var out = OutputBuffer()
            for text in texts {
                let (record, _) = try putRecord(journal, text)
                formatter.append(RecordView(base: UnsafeRawPointer(record)), to: &out)
            }
            #expect(sink.write(out.bytes) == nil)
        }
        try writeBatch(Self.acknowledged)
        journal.publish(
            Journal.Checkpoint(
                readPosition: journal.reservedEnd, device: sink.device, inode: sink.inode, fileSize: sink.size))
        journal.release(upTo: journal.reservedEnd)
        let checkpointSize = sink.size
        // The next batch reaches the file, and the process dies before its checkpoint.
        try writeBatch(Self.unacknowledged)
        return (checkpointSize, sink.size)
    }

    @Test("logs --journal shows what recovery will leave, for a log file cut at every byte of its last line")
    func everyCutOfTheLastLine() throws {
        let probe = TemporaryDirectory()
        let sizes = try leaveKilledState(in: probe)
        let lastLineLength = UInt64(
            (try String(contentsOfFile: "\(probe.logs)/test.log", encoding: .utf8)).split(separator: "\n").last!.utf8
                .count + 1)
        // Every cut inside the last line, and each earlier line boundary of the unacknowledged batch.
        var cuts = Array((sizes.written - lastLineLength)...sizes.written)
        cuts += [sizes.checkpoint, sizes.checkpoint + 1]
        let cli = helperExecutable("blackbox")

        for cut in cuts {
            let directory = TemporaryDirectory()
            _ = try leaveKilledState(in: directory)
            let log = "\(directory.logs)/test.log"
            #expect(truncate(log, off_t(cut)) == 0)

            // The view, as the library gives it to the CLI, and as the CLI prints it.
            let pending = try JournalInspector.pendingLines(path: "\(directory.path)/journal")
            let kept = try #require(pending.keptSize(ofFileAt: log))
            let fileText = String(
                decoding: try #require(FileManager.default.contents(atPath: log)).prefix(Int(kept)), as: UTF8.self)
            let view = fileText.split(separator: "\n").map(String.init) + pending.lines
            let printed = try runProgram(cli, ["logs", "--journal", directory.path])
            #expect(printed.status == 0, "\(printed.stderr)")
            #expect(printed.stdout.split(separator: "\n").map(String.init) == view, "cut at \(cut)")

            // The real thing: a start on the directory recovers it.
            let core = try LoggingCore(configuration: testConfiguration(directory))
            core.shutdown()
            let recovered = logLines(directory).filter { !$0.contains(" blackbox: recovered ") }
            #expect(view == recovered, "cut at \(cut) of \(sizes.written)")
            let expected = Self.acknowledged + Self.unacknowledged
            #expect(
                recovered.count == expected.count && zip(recovered, expected).allSatisfy { $0.hasSuffix(": " + $1) },
                "cut at \(cut): every line exactly once, in order")
        }
    }

    /// The steps of a rotation a kill can fall between (`LogWriter.rotate`, `ArchiveMaintainer`).
    enum RotationStep: String, CaseIterable, Sendable {
        /// The old file renamed to its archive name; no new file, the checkpoint still names the old one.
        case renamed
        /// The new active file created, empty; the checkpoint still names the archive.
        case reopened
        /// The checkpoint names the new file; a batch written to it, not yet checkpointed.
        case newFileWritten
        /// Compression half done: `<archive>.gz.tmp` beside the archive.
        case compressing
        /// Compression done, the plain archive not yet removed: both `<archive>` and `<archive>.gz`.
        case compressedNotUnlinked
    }

    @Test(
        "logs --journal shows what recovery will leave, for a kill at every step of a rotation",
        arguments: RotationStep.allCases)
    func everyStepOfARotation(step: RotationStep) throws {
        let directory = TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: directory.logs, withIntermediateDirectories: true)
        do {
            let file = try JournalFile.open(path: "\(directory.path)/journal", capacity: 256 << 10)
            defer { file.close() }
            let journal = Journal(file: file)
            var sink = try LogFileSink(directory: directory.logs, baseName: "test", checkpoint: nil, now: 0)
            var formatter = LineFormatter(format: .text)
            func writeBatch(_ texts: [String], to sink: LogFileSink) throws {
                var out = OutputBuffer()
                for text in texts {
                    let (record, _) = try putRecord(journal, text)
                    formatter.append(RecordView(base: UnsafeRawPointer(record)), to: &out)
                }
                #expect(sink.write(out.bytes) == nil)
            }
            func checkpoint(_ sink: LogFileSink) {
                journal.publish(
                    Journal.Checkpoint(
                        readPosition: journal.reservedEnd, device: sink.device, inode: sink.inode,
                        fileSize: sink.size))
                journal.release(upTo: journal.reservedEnd)
            }
            try writeBatch(Self.acknowledged, to: sink)
            checkpoint(sink)
            // Records logged after the rotation started: in the journal, maybe in the new file.
            let archive = "\(directory.logs)/test.20261121T223939.123Z--20261121T231502.004Z.log"
            #expect(rename("\(directory.logs)/test.log", archive) == 0)
            switch step {
            case .renamed:
                for text in Self.unacknowledged { _ = try putRecord(journal, text) }
            case .reopened:
                sink = try LogFileSink(directory: directory.logs, baseName: "test", checkpoint: nil, now: 0)
                for text in Self.unacknowledged { _ = try putRecord(journal, text) }
            case .newFileWritten:
                sink = try LogFileSink(directory: directory.logs, baseName: "test", checkpoint: nil, now: 0)
                checkpoint(sink)
                try writeBatch(Self.unacknowledged, to: sink)
            case .compressing, .compressedNotUnlinked:
                sink = try LogFileSink(directory: directory.logs, baseName: "test", checkpoint: nil, now: 0)
                checkpoint(sink)
                try writeBatch(Self.unacknowledged, to: sink)
                try Gzip.compress(archive, to: archive + ".gz")
                if step == .compressing {
                    #expect(rename(archive + ".gz", archive + ".gz.tmp") == 0)
                    #expect(truncate(archive + ".gz.tmp", 10) == 0)
                }
            }
            withExtendedLifetime(sink) {}
        }

        let printed = try runProgram(helperExecutable("blackbox"), ["logs", "--journal", directory.path])
        #expect(printed.status == 0, "\(printed.stderr)")
        let view = printed.stdout.split(separator: "\n").map(String.init)

        var configuration = testConfiguration(directory)
        configuration.retention.compressArchives = true
        configuration.retention.maxAge = nil  // the archive's name is a fixed date, which ages past any limit
        let core = try LoggingCore(configuration: configuration)
        core.shutdown()
        let recovered = try allLogLines(directory).filter { !$0.contains(" blackbox: recovered ") }
        #expect(view == recovered, "\(step): the view and the recovered files differ")
        let expected = Self.acknowledged + Self.unacknowledged
        #expect(
            recovered.count == expected.count && zip(recovered, expected).allSatisfy { $0.hasSuffix(": " + $1) },
            "\(step): every line exactly once, in order: \(recovered)")
    }

    @Test("a file that is not the checkpoint's is kept whole")
    func otherFilesAreKept() {
        let checkpoint = Journal.Checkpoint(readPosition: 0, device: 1, inode: 2, fileSize: 10)
        #expect(checkpoint.keptSize(device: 1, inode: 2, size: 25) == 10)
        #expect(checkpoint.keptSize(device: 1, inode: 2, size: 7) == 7)
        #expect(checkpoint.keptSize(device: 1, inode: 3, size: 25) == 25)
        #expect(checkpoint.keptSize(device: 9, inode: 2, size: 25) == 25)
    }
}
