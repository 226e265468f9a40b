import BlackboxFormat
import BlackboxTestSupport
import Foundation
import Logging
import Testing

@testable import Blackbox

/// Issue 52's W5 bar: a swift-log call's `error:` costs the caller its type name only; the writer
/// prints the description (`DeferredErrorDescriptions`). What a crash in the writer's lag leaves is
/// the line with the type name.
@Suite struct DeferredErrorDescriptionTests {
    enum PaymentFailure: Error {
        case declined(order: Int)
    }

    @Test("the writer prints a logged error's description; the journal, and so recovery, holds its type name")
    func writerDescribesJournalKeepsTypeName() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let core = try LoggingCore(configuration: testConfiguration(directory))
        let logger = Logger(label: "shop") { BlackboxLogHandler(label: $0, core: core) }
        core.holdWriter(true)
        // The app's own `error` value comes first and stays; the call's error is the last `error`.
        logger.error(
            "charge failed", error: PaymentFailure.declined(order: 17), metadata: ["error": "app's own", "order": "17"])
        logger.warning("retrying", error: PaymentFailure.declined(order: 18))
        let typeName = String(reflecting: PaymentFailure.self)

        // What a kill now would leave: the journal's records, replayed by the next start.
        let killed = TemporaryDirectory()
        defer { killed.remove() }
        try FileManager.default.copyItem(
            atPath: DiagnosticsDirectory(directory.path).journal, toPath: DiagnosticsDirectory(killed.path).journal)
        let next = try LoggingCore(configuration: testConfiguration(killed))
        next.shutdown()
        let recovered = logLines(killed).filter { $0.contains(" shop: ") }
        #expect(recovered.count == 2, "\(logLines(killed))")
        #expect(recovered.first?.contains(#"error="app's own" error=\#(typeName) order=17"#) == true, "\(recovered)")
        #expect(recovered.last?.contains("error=\(typeName)") == true, "\(recovered)")

        core.holdWriter(false)
        core.shutdown()
        let lines = logLines(directory).filter { $0.contains(" shop: ") }
        #expect(lines.count == 2, "\(logLines(directory))")
        #expect(lines.first?.contains(#"error="app's own" error="declined(order: 17)" order=17"#) == true, "\(lines)")
        #expect(lines.last?.contains(#"error="declined(order: 18)""#) == true, "\(lines)")
        #expect(core.errorDescriptions.take(for: 0) == nil)
    }

    @Test("an error type's name and whether it can say where it was thrown are found once and kept")
    func errorTypeFacts() {
        struct Located: ReportableError {
            var reportDomain: String { "shop" }
            var reportCode: Int { 1 }
            var reportUserInfo: [String: String] { [:] }
        }
        let plain = ErrorTypeFacts.of(PaymentFailure.declined(order: 1))
        #expect(plain.name == String(reflecting: PaymentFailure.self) && !plain.isReportable)
        let located = ErrorTypeFacts.of(Located())
        #expect(located.name == String(reflecting: Located.self) && located.isReportable)
        #expect(ErrorTypeFacts.of(PaymentFailure.declined(order: 2)).name == plain.name)
    }

    @Test("a description longer than the limit is cut at a character boundary")
    func longDescriptionIsCut() {
        struct Wordy: Error, CustomStringConvertible { var description: String { String(repeating: "é", count: 100) } }
        let cut = DeferredErrorDescriptions.describe(Wordy(), limit: 51)
        #expect(cut == String(repeating: "é", count: 25))
        #expect(DeferredErrorDescriptions.describe(Wordy(), limit: 200) == Wordy().description)
    }

    @Test("a record's last error value is replaced, every length with it")
    func describedRecordCopy() {
        let scratch = UnsafeMutableRawPointer.allocate(byteCount: 4096, alignment: 8)
        defer { scratch.deallocate() }
        let metadata = EncodedMetadata(entries: [("error", "mine"), ("error", "Shop.Failure"), ("zone", "eu")])
        var writer = RecordWriter(base: scratch)
        for part in ["shop", "Shop/Pay.swift", "charge failed"] {
            Array(part.utf8).withUnsafeBytes { writer.append($0) }
        }
        metadata.write(into: &writer)
        writer.writeHeader(
            timestamp: 1, threadID: 2, line: 3, kind: .text, level: .error, labelCount: 4, fileCount: 14,
            flags: .describesErrorLater, messageCount: 13, metadataCount: metadata.byteCount)
        scratch.storeBytes(of: UInt32(writer.offset), toByteOffset: RecordLayout.length, as: UInt32.self)
        let record = RecordView(base: UnsafeRawPointer(scratch))

        for description in ["", "x", "a much longer description than the type name: ünïcödé"] {
            var described = DescribedRecord()
            let copy = described.copy(of: record, describing: description)
            #expect(copy.isWellFormed)
            #expect(copy.length == record.length - "Shop.Failure".utf8.count + description.utf8.count)
            #expect(String(decoding: copy.message, as: UTF8.self) == "charge failed")
            let entries = copy.metadata.map {
                (String(decoding: $0.key, as: UTF8.self), String(decoding: $0.value, as: UTF8.self))
            }
            #expect(entries.map(\.0) == ["error", "error", "zone"])
            #expect(entries.map(\.1) == ["mine", description, "eu"])
        }
    }
}
