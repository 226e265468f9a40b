import BlackboxFormat
import BlackboxTestSupport
import Foundation
import Logging
import Synchronization
import Testing

@_spi(Benchmarks) @testable import Blackbox

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
        #expect(core.errorDescriptions.heldCount == 0, "the writer releases what it described when it stops")
    }

    struct DescribedFailure: Error, CustomStringConvertible {
        let order: Int
        var description: String { "declined order \(order)" }
    }

    /// Describing by reflection (~4.5 µs a value) in a flood of errors put the writer behind and made
    /// callers wait for space; far behind, the writer keeps the type name of such an error and says so.
    @Test("far behind, the writer writes an error printed by reflection with its type only, and says how many")
    func farBehindKeepsTypeNames() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let core = try LoggingCore(configuration: testConfiguration(directory))
        let logger = Logger(label: "shop") { BlackboxLogHandler(label: $0, core: core) }
        core.holdWriter(true)
        var order = 0
        // Three quarters of the journal behind the held writer; the last records are within half.
        while core.journal.reservedEnd < core.journal.capacity * 3 / 4 {
            order += 1
            if order % 10 == 0 {
                logger.error("charge failed", error: DescribedFailure(order: order))
            } else {
                logger.error("charge failed", error: PaymentFailure.declined(order: order))
            }
        }
        core.holdWriter(false)
        core.shutdown()
        let lines = logLines(directory).filter { $0.contains(" shop: ") }
        #expect(lines.count == order, "no line lost")
        let typeName = String(reflecting: PaymentFailure.self)
        let typeOnly = lines.filter { $0.contains("error=\(typeName) (") }
        let described = lines.filter { $0.contains("error=\"declined(order: ") }
        #expect(typeOnly.count + described.count + order / 10 == order, "\(lines.prefix(3))")
        #expect(typeOnly.count > order / 4 && described.count > order / 10, "\(typeOnly.count) \(described.count)")
        #expect(lines.first?.contains("error=\(typeName) (") == true, "the first ones were far behind")
        #expect(lines.last?.contains("error=\"declined(order: ") == true, "the last ones were not")
        #expect(
            lines.filter { $0.contains("error=\"declined order ") }.count == order / 10,
            "an error with a description of its own is always described")
        let notices = logLines(directory).filter { $0.contains("logged errors were written with their type only") }
        #expect(notices.count >= 1, "\(logLines(directory).suffix(3))")
        let counted = notices.compactMap { $0.split(separator: "blackbox: ").last?.split(separator: " ").first }
            .compactMap { Int($0) }.reduce(0, +)
        #expect(counted == typeOnly.count, "\(notices)")
    }

    @Test("an error type's name and whether it can say where it was thrown are found once and kept")
    func errorTypeFacts() {
        struct Located: ReportableError {
            var reportDomain: String { "shop" }
            var reportCode: Int { 1 }
            var reportUserInfo: [String: String] { [:] }
        }
        let known = KnownErrorTypes()
        #expect(known.readsTypeFromBox, "Swift on Linux keeps an error's type in its box")
        let plain = known.facts(of: PaymentFailure.declined(order: 1))
        #expect(!plain.owned)
        #expect(plain.facts.takeUnretainedValue().name == String(reflecting: PaymentFailure.self))
        #expect(!plain.facts.takeUnretainedValue().isReportable)
        #expect(!plain.facts.takeUnretainedValue().describesItself, "printed by reflection")
        #expect(known.facts(of: DescribedFailure(order: 1)).facts.takeUnretainedValue().describesItself)
        let located = known.facts(of: Located()).facts.takeUnretainedValue()
        #expect(located.name == String(reflecting: Located.self) && located.isReportable)
        #expect(known.facts(of: PaymentFailure.declined(order: 2)).facts.toOpaque() == plain.facts.toOpaque())
    }

    class BaseFailure: Error, @unchecked Sendable {}
    final class RefundFailure: BaseFailure, @unchecked Sendable {}

    @Test("a class's error is known by the instance's class, not the type it was thrown as")
    func classErrorFacts() {
        let known = KnownErrorTypes()
        let base: BaseFailure = BaseFailure()
        let refund: BaseFailure = RefundFailure()
        #expect(known.facts(of: base).facts.takeUnretainedValue().name == String(reflecting: BaseFailure.self))
        #expect(known.facts(of: refund).facts.takeUnretainedValue().name == String(reflecting: RefundFailure.self))
        #expect(known.facts(of: base).facts.takeUnretainedValue().name == String(reflecting: BaseFailure.self))
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
        let entry = EncodedMetadata.errorEntryBytes(typeName: "Shop.Failure")
        defer { withExtendedLifetime(entry) {} }
        let metadata = entry.withUnsafeBytes {
            EncodedMetadata(entries: [("error", "mine"), ("zone", "eu")], errorEntry: $0)
        }
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

    @Test(
        "a log call's error entry is written in its sorted place, after the app's own error entry",
        arguments: [
            ([], ["error"]),
            ([("a", "1")], ["a", "error"]),
            ([("zone", "eu")], ["error", "zone"]),
            (
                [("a", "1"), ("error", "mine"), ("errors", "2"), ("zone", "eu")],
                ["a", "error", "error", "errors", "zone"]
            ),
        ] as [([(String, String)], [String])])
    func errorEntryPlace(entries: [(String, String)], keys: [String]) {
        let entry = EncodedMetadata.errorEntryBytes(typeName: "Shop.Failure")
        defer { withExtendedLifetime(entry) {} }
        let metadata = entry.withUnsafeBytes {
            EncodedMetadata(entries: entries.map { (key: $0.0, value: $0.1) }, errorEntry: $0)
        }
        let scratch = UnsafeMutableRawPointer.allocate(byteCount: 1024, alignment: 8)
        defer { scratch.deallocate() }
        var writer = RecordWriter(base: scratch)
        let start = writer.offset
        metadata.write(into: &writer)
        #expect(writer.offset - start == metadata.byteCount)
        let read = MetadataReader(bytes: UnsafeRawBufferPointer(start: scratch + start, count: metadata.byteCount)).map
        {
            (String(decoding: $0.key, as: UTF8.self), String(decoding: $0.value, as: UTF8.self))
        }
        #expect(read.map(\.0) == keys)
        #expect(read.last { $0.0 == "error" }?.1 == "Shop.Failure", "the call's error is the last error entry")
        #expect(EncodedMetadata().byteCount == 0 && EncodedMetadata().isEmpty)
    }

    @Test("error types are found without a lock up to half the table, then under it; past both, made at each call")
    func knownErrorTypesTable() {
        let table = KnownErrorTypes()
        let owners = (0..<(KnownErrorTypes.capacity / 2 + KnownErrorTypes.overflowCapacity + 10)).map { _ in Owner() }
        func facts(_ index: Int) -> ErrorTypeFacts {
            ErrorTypeFacts(type: ObjectIdentifier(owners[index]), name: "Type\(index)", isReportable: index % 2 == 0)
        }
        func name(_ index: Int) -> String? {
            table.facts(of: ObjectIdentifier(owners[index]))?.takeUnretainedValue().name
        }
        let fixed = KnownErrorTypes.capacity / 2
        for index in 0..<fixed + KnownErrorTypes.overflowCapacity { #expect(!table.learn(facts(index)).owned) }
        for index in 0..<fixed + KnownErrorTypes.overflowCapacity {
            let found = table.facts(of: ObjectIdentifier(owners[index]))?.takeUnretainedValue()
            #expect(found?.name == "Type\(index)" && found?.isReportable == (index % 2 == 0), "type \(index)")
        }
        let past = table.learn(facts(owners.count - 1))
        #expect(past.owned, "the tables are full: the caller owns the facts")
        past.facts.release()
        #expect(name(owners.count - 1) == nil)
        #expect(name(fixed) == "Type\(fixed)" && name(0) == "Type0", "what the tables hold stays")
        let again = table.learn(facts(0))
        #expect(!again.owned && again.facts.takeUnretainedValue().name == "Type0", "learning a type twice keeps one")
    }

    @Test("threads learning and reading the same error types see each one whole or not yet")
    func knownErrorTypesConcurrently() {
        let table = KnownErrorTypes()
        let owners = (0..<100).map { _ in Owner() }
        let wrong = SharedCount()
        DispatchQueue.concurrentPerform(iterations: 4) { thread in
            for round in 0..<50 {
                for (index, owner) in owners.enumerated() {
                    let type = ObjectIdentifier(owner)
                    if let found = table.facts(of: type)?.takeUnretainedValue() {
                        if found.name != "Type\(index)" || found.type != type { wrong.add() }
                    } else if (index + thread + round) % 3 == 0 {
                        table.learn(ErrorTypeFacts(type: type, name: "Type\(index)", isReportable: false))
                    }
                }
            }
        }
        #expect(wrong.value == 0)
        #expect(owners.allSatisfy { table.facts(of: ObjectIdentifier($0)) != nil })
    }

    @Test("threads holding their first errors at once all reach the writer")
    func firstHoldsRace() {
        let descriptions = DeferredErrorDescriptions(journalCapacity: 1 << 16)
        DispatchQueue.concurrentPerform(iterations: 8) { thread in
            descriptions.hold(PaymentFailure.declined(order: thread), for: UInt64(thread * 64), size: 64)
        }
        for thread in 0..<8 {
            let taken = descriptions.withError(for: UInt64(thread * 64)) { $0 as? PaymentFailure }
            guard case .declined(let order) = taken else {
                Issue.record("slot \(thread) empty")
                continue
            }
            #expect(order == thread)
            #expect(descriptions.withError(for: UInt64(thread * 64)) { $0 } == nil, "described once")
        }
    }

    @Test("an error is a word that owns one reference")
    func errorReference() {
        #expect(MemoryLayout<(any Error)?>.size == MemoryLayout<UInt>.size)
        let counter = ReleaseCounter()
        let bits = ErrorReference.retainedBits(of: TrackedError(counter: counter))
        #expect(counter.released == 0, "the word keeps the error")
        #expect(ErrorReference.borrowing(bits) { ($0 as? TrackedError)?.counter === counter })
        #expect(ErrorReference.borrowing(bits | 1) { $0 is TrackedError }, "a described word is the same error")
        #expect(counter.released == 0, "borrowing leaves the reference")
        ErrorReference.release(bits | 1)
        #expect(counter.released == 1)
    }

    @Test("a described error is released by the caller whose record covers its slot, a pending one is not")
    func callerReleasesDescribedErrors() {
        // 4 KB of ring, 64 slots. Lap 0: errors at 0 (slot 0) and 64 (slot 1), both described.
        let descriptions = DeferredErrorDescriptions(journalCapacity: 4096)
        let counters = (0..<4).map { _ in ReleaseCounter() }
        descriptions.hold(TrackedError(counter: counters[0]), for: 0, size: 64)
        descriptions.hold(TrackedError(counter: counters[1]), for: 64, size: 128)
        #expect(descriptions.withError(for: 0) { "\($0)" } != nil)
        #expect(descriptions.withError(for: 64) { "\($0)" } != nil)
        #expect(counters.map(\.released) == [0, 0, 0, 0], "described errors wait for a caller")
        // Lap 1: a record at 4280 (slot 2) is held first, by another caller; then one at 4096 of 184
        // bytes, which covers slot 1 wholly and slot 2 in part.
        descriptions.hold(TrackedError(counter: counters[3]), for: 4096 + 184, size: 64)
        descriptions.hold(TrackedError(counter: counters[2]), for: 4096, size: 184)
        #expect(counters.map(\.released) == [1, 1, 0, 0], "its own slot's and the covered slot's errors released")
        #expect(descriptions.heldCount == 2)
        #expect(descriptions.withError(for: 4096 + 184) { ($0 as? TrackedError)?.counter === counters[3] } == true)
        // The sweep releases described errors only: the one at 4096 is still waiting for the writer.
        descriptions.releaseDescribed()
        #expect(counters.map(\.released) == [1, 1, 0, 1])
        #expect(descriptions.withError(for: 4096) { ($0 as? TrackedError)?.counter === counters[2] } == true)
        descriptions.releaseDescribed()
        #expect(counters.map(\.released) == [1, 1, 1, 1])
        #expect(descriptions.heldCount == 0)
    }

    /// A core whose journal holds ~400 error records a lap, so that threads logging errors reuse its
    /// slots many times; callers wait for space rather than drop, and nothing is captured.
    private func smallJournal(in directory: TemporaryDirectory) throws -> (LoggingCore, Logger) {
        var configuration = testConfiguration(directory)
        configuration.journalSize = 64 << 10
        configuration.overflow = .block(timeoutMilliseconds: 60_000)
        configuration.capturesLoggedErrors = false
        let core = try LoggingCore(configuration: configuration)
        return (core, Logger(label: "load") { BlackboxLogHandler(label: $0, core: core) })
    }

    @Test("threads logging errors through many laps of a small journal: each line described, each error released once")
    func errorsReleasedOnceUnderLoad() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let (core, logger) = try smallJournal(in: directory)
        let counter = ReleaseCounter()
        let threads = 4
        let perThread = 5_000
        let loggingThreads = Mutex<Set<UInt>>([])
        DispatchQueue.concurrentPerform(iterations: threads) { thread in
            _ = loggingThreads.withLock { $0.insert(UInt(bitPattern: Int(bitPattern: pthread_self()))) }
            for index in 0..<perThread {
                logger.error("charge \(thread)-\(index) failed", error: TrackedError(counter: counter))
            }
        }
        let onLoggingThreads = loggingThreads.withLock { counter.released(onThreads: $0) }
        core.shutdown()
        #expect(counter.released == threads * perThread, "each error released once, none kept")
        // Every lap's errors but the last are released by the next lap's callers, on their threads.
        #expect(onLoggingThreads >= threads * perThread / 2, "\(onLoggingThreads) released by the callers")
        #expect(core.errorDescriptions.heldCount == 0)
        let lines = logLines(directory).filter { $0.contains(" load: ") }
        #expect(lines.count == threads * perThread)
        #expect(
            lines.allSatisfy { $0.contains("error=tracked") }, "\(lines.first { !$0.contains("error=tracked") } ?? "")")
    }

    struct WideFailure: Error {
        let first: Int
        let second: Int
        let third: Int
    }

    enum NamedFailure: Error {
        case declined(reason: String)
    }

    @Test("a plain error of at most 16 bytes is copied, other errors are held by reference")
    func whichErrorsAreCopied() {
        let table = KnownErrorTypes()
        #expect(table.copiesValuesFromBox, "values sit where the copy reads them (checked at start)")
        func size(_ error: any Error) -> Int? { table.facts(of: error).facts._withUnsafeGuaranteedRef(\.inlineSize) }
        #expect(size(PaymentFailure.declined(order: 1)) == MemoryLayout<PaymentFailure>.size)
        #expect(size(DescribedFailure(order: 1)) == MemoryLayout<DescribedFailure>.size)
        #expect(size(WideFailure(first: 1, second: 2, third: 3)) == nil, "24 bytes")
        #expect(size(NamedFailure.declined(reason: "card")) == nil, "a string holds a reference")
        #expect(size(TrackedError(counter: ReleaseCounter())) == nil)
        #expect(size(CocoaStyleError()) == nil, "a class")
    }

    final class CocoaStyleError: Error, Sendable {}

    @Test(
        "a plain error travels in its record: the writer makes it again from the record's bytes, never another process's"
    )
    func copiedErrorsTravelInTheRecord() {
        let table = KnownErrorTypes()
        let record = UnsafeMutableRawPointer.allocate(byteCount: 256, alignment: 8)
        defer { record.deallocate() }
        func carried(_ error: any Error, at offset: Int) -> UnsafeMutableRawBufferPointer? {
            carryInRecord(error, facts: table.facts(of: error).facts, into: record, at: offset)
        }
        func madeAgain(_ bytes: UnsafeMutableRawBufferPointer) -> (any Error)? {
            withCarriedError(bytes) { error in error.withError { $0 } }
        }
        // At an odd offset, as a record's metadata may end.
        guard let payment = carried(PaymentFailure.declined(order: 42), at: 51) else {
            Issue.record("a plain enum is carried")
            return
        }
        guard case .declined(let order) = madeAgain(payment) as? PaymentFailure else {
            Issue.record("not made again: \(String(describing: madeAgain(payment)))")
            return
        }
        #expect(order == 42)
        guard let described = carried(DescribedFailure(order: 7), at: 100) else {
            Issue.record("a small struct is carried")
            return
        }
        #expect(madeAgain(described).map { "\($0)" } == "declined order 7")
        // Another process wrote the same facts address with its own key: the check does not match.
        described[8] ^= 1
        #expect(madeAgain(described) == nil, "a record of another process keeps its type name")
        #expect(carried(WideFailure(first: 1, second: 2, third: 3), at: 0) == nil, "held by reference instead")
    }

    @Test("a record carrying its error value is well formed with it; a held error's record carries none")
    func errorValueInRecordLayout() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let core = try LoggingCore(configuration: testConfiguration(directory))
        defer { core.shutdown() }
        let logger = Logger(label: "shop") { BlackboxLogHandler(label: $0, core: core) }
        // Idle and held, the writer leaves the records in the journal.
        #expect(core.flush())
        core.holdWriter(true)
        defer { core.holdWriter(false) }
        let start = core.journal.releasedPosition
        logger.warning("charge failed", error: PaymentFailure.declined(order: 5))
        logger.warning("charge failed", error: NamedFailure.declined(reason: "card"))
        var records: [RecordView] = []
        var position = start
        while position < core.journal.reservedEnd, let record = core.journal.committedRecord(at: position) {
            records.append(record)
            position += UInt64(RecordLayout.aligned(record.length))
        }
        #expect(records.count == 2)
        guard records.count == 2 else { return }
        #expect(records[0].flags.contains([.describesErrorLater, .carriesErrorValue]) && records[0].isWellFormed)
        #expect(records[0].errorValue.flatMap(RecordErrorValue.read) != nil)
        #expect(records[0].metadata.contains { String(decoding: $0.key, as: UTF8.self) == "error" })
        #expect(
            records[1].flags.contains(.describesErrorLater) && !records[1].flags.contains(.carriesErrorValue)
                && records[1].errorValue == nil && records[1].isWellFormed, "a string payload is held by reference")
    }

    struct StreamedFailure: Error, TextOutputStreamable, CustomStringConvertible {
        func write<Target: TextOutputStream>(to target: inout Target) { target.write("streamed") }
        var description: String { "described" }
    }

    struct DebuggableFailure: Error, CustomDebugStringConvertible {
        var debugDescription: String { "debugged" }
    }

    struct LabeledFailure: Error, CustomStringConvertible {
        let label: String
        var description: String { "labeled \(label)" }
    }

    /// The writer prints an error from its copy or in its box, its type's conformances looked up once
    /// (`ValueDescription`), and must print what `String(describing:)` prints.
    @Test("the writer describes an error in place as String(describing:) does, copied or held")
    func describedInPlace() {
        let errors: [any Error] = [
            PaymentFailure.declined(order: 3), DescribedFailure(order: 7), StreamedFailure(), DebuggableFailure(),
            NamedFailure.declined(reason: "card"), LabeledFailure(label: "gift card"),
            WideFailure(first: 1, second: 2, third: 3), CocoaStyleError(),
        ]
        let descriptions = DeferredErrorDescriptions(journalCapacity: 4096)
        for (index, error) in errors.enumerated() {
            let facts = KnownErrorTypes.shared.facts(of: error).facts
            let copied = facts._withUnsafeGuaranteedRef(\.inlineSize) != nil
            let inPlace = facts._withUnsafeGuaranteedRef(\.valueDescription) != nil
            #expect(inPlace == !(error is CocoaStyleError), "\(type(of: error)): described in place unless a class")
            let printed: String?
            if copied {
                let record = UnsafeMutableRawPointer.allocate(byteCount: RecordErrorValue.size, alignment: 8)
                defer { record.deallocate() }
                printed = carryInRecord(error, facts: facts, into: record, at: 0).flatMap { bytes in
                    withCarriedError(bytes) { deferred in deferred.withFacts { deferred.description(facts: $0) } }
                }
            } else {
                let position = UInt64(index * 64)
                descriptions.hold(error, for: position, size: 64)
                printed = descriptions.withDeferredError(for: position) { deferred in
                    deferred.withFacts { deferred.description(facts: $0) }
                }
            }
            #expect(printed == String(describing: error), "\(type(of: error)), copied: \(copied)")
        }
        #expect(descriptions.heldCount == 4, "four copies described, four references held")
    }

    @Test("threads logging plain errors through many laps of a small journal: each line describes its own call's value")
    func copiedErrorsUnderLoad() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let (core, logger) = try smallJournal(in: directory)
        let threads = 4
        let perThread = 5_000
        // Self-describing, so that the writer describes every one (one printed by reflection may be
        // written with its type only when the writer is far behind).
        DispatchQueue.concurrentPerform(iterations: threads) { thread in
            for index in 0..<perThread {
                let order = thread * 1_000_000 + index
                logger.error("charge \(order) failed", error: DescribedFailure(order: order))
            }
        }
        core.shutdown()
        #expect(core.errorDescriptions.heldCount == 0, "plain values are copied, never held")
        let lines = logLines(directory).filter { $0.contains(" load: ") }
        #expect(lines.count == threads * perThread)
        let mismatched = lines.filter { line in
            guard let start = line.range(of: "charge ")?.upperBound,
                let end = line[start...].firstIndex(of: " ")
            else { return true }
            return !line.contains(#"error="declined order \#(line[start..<end])""#)
        }
        let count = mismatched.count
        let first = mismatched.first ?? ""
        #expect(count == 0, "\(count) lines do not describe their own call's value, first: \(first)")
    }

    /// A record that carries its value leaves the slots it covers alone: a reference an earlier lap
    /// left there is released by the next reference held in its slot, or by the writer's sweep.
    @Test("threads logging held and carried errors in turn through laps of a small journal: each released once")
    func heldAndCarriedErrorsUnderLoad() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let (core, logger) = try smallJournal(in: directory)
        let counter = ReleaseCounter()
        let threads = 4
        let perThread = 4_000
        DispatchQueue.concurrentPerform(iterations: threads) { thread in
            for index in 0..<perThread {
                let order = thread * 1_000_000 + index
                if index % 2 == 0 {
                    logger.error("charge \(order) failed", error: TrackedError(counter: counter))
                } else {
                    logger.error("charge \(order) failed", error: DescribedFailure(order: order))
                }
            }
        }
        core.shutdown()
        #expect(counter.released == threads * perThread / 2, "each held error released once")
        #expect(core.errorDescriptions.heldCount == 0)
        let lines = logLines(directory).filter { $0.contains(" load: ") }
        #expect(lines.count == threads * perThread)
        let wrong = lines.filter { line in
            guard let start = line.range(of: "charge ")?.upperBound, let end = line[start...].firstIndex(of: " "),
                let order = Int(line[start..<end])
            else { return true }
            let expected = order % 2 == 0 ? "error=tracked" : #"error="declined order \#(order)""#
            return !line.contains(expected)
        }
        #expect(wrong.isEmpty, "\(wrong.count) lines without their own error, first: \(wrong.first ?? "")")
    }

    @Test("a running writer releases a described error within its sweep interval when no caller comes")
    func writerReleasesDescribedErrorsWhenQuiet() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let core = try LoggingCore(configuration: testConfiguration(directory))
        defer { core.shutdown() }
        let logger = Logger(label: "shop") { BlackboxLogHandler(label: $0, core: core) }
        let counter = ReleaseCounter()
        logger.warning("charge failed", error: TrackedError(counter: counter))
        #expect(core.flush())
        #expect(logLines(directory).contains { $0.contains("error=tracked") }, "\(logLines(directory))")
        let deadline = monotonicNanoseconds() + 3 * DeferredErrorDescriptions.sweepInterval + 2_000_000_000
        while counter.released == 0 && monotonicNanoseconds() < deadline { usleep(20_000) }
        #expect(counter.released == 1, "released by the writer's sweep, the core still running")
        #expect(core.errorDescriptions.heldCount == 0)
    }
}

/// As a log call writes a plain error's value into its record (`RecordErrorValue`) at `offset`: the
/// 32 bytes written, or nil when `facts` say the value is not copied.
private func carryInRecord(
    _ error: any Error, facts: Unmanaged<ErrorTypeFacts>, into record: UnsafeMutableRawPointer, at offset: Int
) -> UnsafeMutableRawBufferPointer? {
    guard facts._withUnsafeGuaranteedRef(\.inlineSize) != nil else { return nil }
    return withExtendedLifetime(error) {
        guard let borrowed = BorrowedError(error) else { return nil }
        var writer = RecordWriter(base: record)
        writer.offset = offset
        RecordErrorValue.write(facts: facts, value: borrowed.inlineValueBytes, into: &writer)
        #expect(writer.offset == offset + RecordErrorValue.size)
        return UnsafeMutableRawBufferPointer(start: record + offset, count: RecordErrorValue.size)
    }
}

/// As the writer takes a record's value: `body` with the error it describes, nil for another process's.
private func withCarriedError<Result>(
    _ bytes: UnsafeMutableRawBufferPointer, _ body: (DeferredError) -> Result
) -> Result? {
    guard let copied = RecordErrorValue.read(UnsafeRawBufferPointer(bytes)) else { return nil }
    var value = copied.value
    return value.withAddress { body(DeferredError(copy: $0, facts: copied.facts)) }
}

extension DeferredErrorDescriptions {
    /// As a log call holds an error whose value its record does not carry: by reference.
    fileprivate func hold(_ error: any Error, for position: UInt64, size: Int) {
        withExtendedLifetime(error) {
            guard let borrowed = BorrowedError(error) else { return }
            hold(borrowed, for: position, size: size)
        }
    }
}

private final class ReleaseCounter: Sendable {
    /// Releases by thread (`pthread_self`).
    private let counts = Mutex<[UInt: Int]>([:])
    var released: Int { counts.withLock { $0.values.reduce(0, +) } }
    func released(onThreads threads: Set<UInt>) -> Int {
        counts.withLock { counts in threads.reduce(0) { $0 + (counts[$1] ?? 0) } }
    }
    func add() { counts.withLock { $0[UInt(bitPattern: Int(bitPattern: pthread_self())), default: 0] += 1 } }
}

/// An error whose box's release is counted: its only stored property is a class instance whose
/// `deinit` counts, so the instance dies with the last reference to the box.
private struct TrackedError: Error, CustomStringConvertible {
    let token: Token
    var counter: ReleaseCounter { token.counter }
    var description: String { "tracked" }
    init(counter: ReleaseCounter) { token = Token(counter: counter) }

    final class Token: Sendable {
        let counter: ReleaseCounter
        init(counter: ReleaseCounter) { self.counter = counter }
        deinit { counter.add() }
    }
}

private final class Owner: Sendable {}
