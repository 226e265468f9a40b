import BlackboxTestSupport
import Foundation
import Testing

@testable import Blackbox

@Suite struct JournalTests {
    let directory = TemporaryDirectory()
    var path: String { "\(directory.path)/journal" }

    @discardableResult
    func put(_ journal: Journal, _ text: String, commit: Bool = true) throws -> (
        record: UnsafeMutableRawPointer, position: UInt64
    ) {
        try putRecord(journal, text, commit: commit)
    }

    func recovered(_ capacity: Int = 64 << 10) throws -> (messages: [String], outcome: Journal.RecoveryOutcome) {
        let file = try JournalFile.open(path: path, capacity: capacity)
        defer { file.close() }
        #expect(file.reopened)
        var messages: [String] = []
        let outcome = Journal(file: file).recover { record, _ in
            messages.append(String(decoding: record.message, as: UTF8.self))
        }
        return (messages, outcome)
    }

    @Test func recordsSurviveAReopen() throws {
        let file = try JournalFile.open(path: path, capacity: 64 << 10)
        #expect(!file.reopened)
        let journal = Journal(file: file)
        for i in 0..<3 { try put(journal, "record \(i)") }
        file.close()
        let (messages, outcome) = try recovered()
        #expect(messages == ["record 0", "record 1", "record 2"])
        #expect(outcome == Journal.RecoveryOutcome(records: 3, skippedBytes: 0, skippedRegions: 0))
    }

    @Test func tornRecordIsSkippedAndLaterRecordsKept() throws {
        let file = try JournalFile.open(path: path, capacity: 64 << 10)
        let journal = Journal(file: file)
        try put(journal, "first")
        try put(journal, "torn: never committed", commit: false)
        try put(journal, "third")
        file.close()
        let (messages, outcome) = try recovered()
        #expect(messages == ["first", "third"])
        #expect(outcome.skippedRegions == 1)
        #expect(outcome.skippedBytes == UInt64(RecordLayout.aligned(RecordLayout.headerSize + 1 + 21)))
    }

    @Test func corruptedRecordFailsItsChecksum() throws {
        let file = try JournalFile.open(path: path, capacity: 64 << 10)
        let journal = Journal(file: file)
        try put(journal, "first")
        let (record, _) = try put(journal, "second")
        try put(journal, "third")
        (record + RecordLayout.headerSize + 2).storeBytes(of: UInt8(ascii: "X"), as: UInt8.self)
        file.close()
        let (messages, outcome) = try recovered()
        #expect(messages == ["first", "third"])
        #expect(outcome.skippedRegions == 1)
    }

    @Test func absurdLengthIsRejected() throws {
        let file = try JournalFile.open(path: path, capacity: 64 << 10)
        let journal = Journal(file: file)
        let (record, _) = try put(journal, "liar")
        try put(journal, "honest")
        record.storeBytes(of: UInt32.max, toByteOffset: RecordLayout.length, as: UInt32.self)
        file.close()
        let (messages, _) = try recovered()
        #expect(messages == ["honest"])
    }

    @Test func fullRingRefusesThenAcceptsAfterRelease() throws {
        let file = try JournalFile.open(path: path, capacity: 64 << 10)
        defer { file.close() }
        let journal = Journal(file: file)
        var positions: [UInt64] = []
        while let slot = journal.tryReserve(1000) {
            positions.append(slot.position)
        }
        #expect(positions.count == (64 << 10) / 1000)
        #expect(journal.tryReserve(1000) == nil)
        journal.release(upTo: positions[2])
        #expect(journal.tryReserve(1000) != nil)
    }

    @Test func recordsCrossTheRingEndContiguously() throws {
        let file = try JournalFile.open(path: path, capacity: 64 << 10)
        defer { file.close() }
        let journal = Journal(file: file)
        var cursor: UInt64 = 0
        var seen = 0
        for i in 0..<2000 {
            let text = "wrap \(i) " + String(repeating: "x", count: i % 97)
            try put(journal, text)
            let record = try #require(journal.committedRecord(at: cursor))
            #expect(String(decoding: record.message, as: UTF8.self) == text)
            cursor += UInt64(RecordLayout.aligned(record.length))
            journal.release(upTo: cursor)
            seen += 1
        }
        #expect(cursor > 3 * (64 << 10))  // went round the ring several times
        #expect(seen == 2000)
    }

    @Test func secondOpenGetsAClearLockError() throws {
        let file = try JournalFile.open(path: path, capacity: 64 << 10)
        defer { file.close() }
        #expect(throws: BlackboxError.journalLocked(path: path, ownerPID: getpid())) {
            try JournalFile.open(path: path, capacity: 64 << 10)
        }
    }

    @Test func badSizesAreRefused() {
        #expect(throws: BlackboxError.self) { try JournalFile.open(path: path, capacity: 100_000) }
        #expect(throws: BlackboxError.self) { try JournalFile.open(path: path, capacity: 4096) }
    }

    @Test func checkpointSurvivesReopen() throws {
        let file = try JournalFile.open(path: path, capacity: 64 << 10)
        let journal = Journal(file: file)
        let checkpoint = Journal.Checkpoint(readPosition: 0, device: 1, inode: 2, fileSize: 3, fileStartNanoseconds: 4)
        journal.publish(checkpoint)
        file.close()
        let again = try JournalFile.open(path: path, capacity: 64 << 10)
        defer { again.close() }
        #expect(Journal(file: again).loadCheckpoint() == checkpoint)
    }
}
