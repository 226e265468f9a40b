import BlackboxFormat
import BlackboxTestSupport
import Foundation
import Testing

/// `CrashReport.encoded()` writes the JSON itself; `JSONEncoder` (`CrashReport.makeEncoder()`) is the
/// oracle, byte for byte.
@Suite struct CrashReportJSONTests {
    @Test func aReportWithEveryFieldSetIsWrittenAsJSONEncoderWritesIt() throws {
        let report = Self.everyFieldSet()
        #expect(Self.unsetFields(of: report) == [], "set these fields in everyFieldSet(), and write them in encoded()")
        let expected = try CrashReport.makeEncoder().encode(report)
        #expect(String(decoding: report.encoded(), as: UTF8.self) == String(decoding: expected, as: UTF8.self))
        #expect(try CrashReport.decode(report.encoded()) == report)
    }

    @Test func aReportWithNothingOptionalSetIsWrittenAsJSONEncoderWritesIt() throws {
        let report = CrashReport(
            id: UUID(), kind: .nonfatal, app: .init(name: ""),
            host: .init(name: "", os: "", kernel: "", architecture: ""),
            process: .init(pid: 0, crashTime: Date(timeIntervalSince1970: 0)), thread: .init(id: 0, name: nil))
        #expect(report.encoded() == (try CrashReport.makeEncoder().encode(report)))
        #expect(Self.unsetFields(of: report).contains("report.signal"), "the fixture check sees an unset field")
    }

    /// Strings with everything JSON escapes (quotes, backslashes, every control character), what it
    /// leaves alone (`/`, DEL, U+2028, emoji) and dictionary keys whose byte order differs from
    /// Swift's string order (a decomposed `é` before `f`).
    @Test func randomReportsAreWrittenAsJSONEncoderWritesThem() throws {
        var random = SplitMix64(seed: 2026_12_05)
        let encoder = CrashReport.makeEncoder()
        for _ in 0..<300 {
            let report = Self.randomReport(&random)
            let expected = try encoder.encode(report)
            let written = report.encoded()
            #expect(written == expected)
            if written != expected {
                Issue.record("first difference in: \(String(decoding: written, as: UTF8.self).prefix(2000))")
                break
            }
        }
    }

    // MARK: fixtures

    static let awkward: [String] = [
        "", "plain", "quote \" and \\ backslash", "slash / and <tag> & 'single'", "new\nline\r\ttab\u{08}\u{0C}",
        "\u{00}\u{01}\u{1F}\u{7F}", "line\u{2028}separator", "é composed", "e\u{301} decomposed", "😀 emoji",
        "Ünïcödé 日本語", "B", "Z", "_", "a10", "a2", "f",
    ]

    static func randomString(_ random: inout SplitMix64) -> String {
        let count = Int(random.next() % 3)
        return (0...count).map { _ in awkward[Int(random.next() % UInt64(awkward.count))] }.joined()
    }

    static func randomDictionary(_ random: inout SplitMix64) -> [String: String] {
        var dictionary: [String: String] = [:]
        for _ in 0..<Int(random.next() % 6) { dictionary[randomString(&random)] = randomString(&random) }
        return dictionary
    }

    static func maybe<T>(_ random: inout SplitMix64, _ make: (inout SplitMix64) -> T) -> T? {
        random.next() % 2 == 0 ? nil : make(&random)
    }

    static func randomFrame(_ random: inout SplitMix64, index: Int) -> CrashReport.Frame {
        var frame = CrashReport.Frame(
            index: index, address: randomString(&random), imageIndex: maybe(&random) { Int($0.next() % 9) },
            imageOffset: maybe(&random, randomString),
            symbolication: maybe(&random) { $0.next() % 2 == 0 ? .debugInfo : .symbolTable })
        frame.symbols = (0..<Int(random.next() % 3)).map { _ in
            CrashReport.Symbol(
                function: randomString(&random), mangledName: maybe(&random, randomString),
                file: maybe(&random, randomString),
                line: maybe(&random) { Int($0.next() % 100_000) }, column: maybe(&random) { -Int($0.next() % 100) },
                inlined: random.next() % 2 == 0)
        }
        frame.asyncResume = maybe(&random) { $0.next() % 2 == 0 }
        frame.inApp = maybe(&random) { $0.next() % 2 == 0 }
        frame.sourceContext = maybe(&random) {
            CrashReport.SourceContext(before: [randomString(&$0)], line: randomString(&$0), after: [])
        }
        return frame
    }

    static func randomMapping(_ random: inout SplitMix64) -> CrashReport.MemoryMapping {
        .init(
            start: randomString(&random), end: randomString(&random), permissions: randomString(&random),
            path: maybe(&random, randomString))
    }

    static func randomReport(_ random: inout SplitMix64) -> CrashReport {
        let kinds = CrashReport.Kind.allCases
        var report = CrashReport(
            id: UUID(), kind: kinds[Int(random.next() % UInt64(kinds.count))],
            app: .init(
                name: randomString(&random), version: maybe(&random, randomString), build: maybe(&random, randomString)),
            host: .init(
                name: randomString(&random), os: randomString(&random), kernel: randomString(&random),
                architecture: randomString(&random)),
            process: .init(
                pid: Int32(truncatingIfNeeded: random.next()), path: maybe(&random, randomString),
                startTime: maybe(&random) { Date(timeIntervalSince1970: Double($0.next() % 4_000_000_000_000) / 1000) },
                crashTime: Date(timeIntervalSince1970: Double(random.next() % 4_000_000_000_000) / 1000 - 1_000_000_000)
            ),
            thread: .init(id: Int32(truncatingIfNeeded: random.next()), name: maybe(&random, randomString)))
        report.partial = random.next() % 2 == 0
        report.signal = maybe(&random) { random in
            var signal = CrashReport.SignalDetails(
                number: Int32(random.next() % 64), name: randomString(&random), code: -Int32(random.next() % 9),
                codeName: maybe(&random, randomString), faultAddress: randomString(&random),
                senderPID: maybe(&random) { Int32($0.next() % 99_999) })
            signal.access = maybe(&random, randomString)
            signal.faultMemory = maybe(&random) {
                .init(
                    holding: maybe(&$0, randomMapping), below: maybe(&$0, randomMapping),
                    above: maybe(&$0, randomMapping))
            }
            signal.stackMemory = maybe(&random) { .init(holding: randomMapping(&$0)) }
            return signal
        }
        report.fatalMessage = maybe(&random, randomString)
        report.reason = maybe(&random, randomString)
        report.registers = (0..<Int(random.next() % 4)).map { _ in
            .init(name: randomString(&random), value: randomString(&random))
        }
        report.frames = (0..<Int(random.next() % 5)).map { randomFrame(&random, index: $0) }
        report.threads = maybe(&random) { random in
            (0..<Int(random.next() % 3)).map { _ in
                CrashReport.ThreadStack(
                    id: Int32(random.next() % 9999), name: maybe(&random, randomString),
                    crashed: random.next() % 2 == 0,
                    frameSource: randomString(&random), problem: maybe(&random, randomString),
                    scope: maybe(&random, randomDictionary),
                    frames: (0..<Int(random.next() % 3)).map { randomFrame(&random, index: $0) })
            }
        }
        report.omittedFrames = maybe(&random) {
            .init(omittedAfterIndex: Int($0.next() % 99), count: Int($0.next() % 9999))
        }
        report.frameSource = randomString(&random)
        report.symbolicated = random.next() % 2 == 0
        report.images = (0..<Int(random.next() % 3)).map { _ in
            var image = CrashReport.Image(
                path: randomString(&random), bias: randomString(&random), start: randomString(&random),
                end: randomString(&random), buildID: maybe(&random, randomString))
            image.buildIDMatches = maybe(&random) { $0.next() % 2 == 0 }
            return image
        }
        report.logTail = (0..<Int(random.next() % 4)).map { _ in randomString(&random) }
        report.metadata = randomDictionary(&random)
        report.annotations = maybe(&random, randomDictionary)
        report.scope = maybe(&random, randomDictionary)
        report.notes = (0..<Int(random.next() % 3)).map { _ in randomString(&random) }
        report.termination = maybe(&random) {
            .init(
                cause: randomString(&$0), lastSeenAlive: Date(timeIntervalSince1970: Double($0.next() % 2_000_000_000)),
                detectedAt: Date(timeIntervalSince1970: 1_700_000_000.5),
                cgroupOOMKillsBefore: maybe(&$0) { Int($0.next() % 9) },
                cgroupOOMKillsAfter: maybe(&$0) { Int($0.next() % 9) })
        }
        return report
    }

    static func everyFieldSet() -> CrashReport {
        let mapping = CrashReport.MemoryMapping(
            start: "0x1000", end: "0x2000", permissions: "r-xp", path: "/usr/bin/app")
        var report = CrashReport(
            id: UUID(), kind: .crash, app: .init(name: "app", version: "1.0", build: "77"),
            host: .init(name: "host", os: "Debian", kernel: "6.1", architecture: "x86_64"),
            process: .init(pid: 42, path: "/usr/bin/app", startTime: Date(), crashTime: Date()),
            thread: .init(id: 42, name: "main"))
        report.partial = true
        var signal = CrashReport.SignalDetails(
            number: 11, name: "SIGSEGV", code: 1, codeName: "SEGV_MAPERR", faultAddress: "0x0", senderPID: 7)
        signal.access = "read"
        signal.faultMemory = .init(holding: mapping, below: mapping, above: mapping)
        signal.stackMemory = .init(holding: mapping, below: mapping, above: mapping)
        report.signal = signal
        report.fatalMessage = "Fatal error: \"x\""
        report.reason = "Swift runtime failure: Index out of range"
        report.registers = [.init(name: "rip", value: "0x1")]
        var frame = CrashReport.Frame(
            index: 0, address: "0x1", imageIndex: 0, imageOffset: "0x10",
            symbols: [.init(function: "f()", mangledName: "$s1f", file: "a.swift", line: 3, column: 4, inlined: true)],
            symbolication: .debugInfo)
        frame.asyncResume = true
        frame.inApp = true
        frame.sourceContext = .init(before: ["a"], line: "b", after: ["c"])
        report.frames = [frame]
        report.threads = [
            .init(
                id: 42, name: "main", crashed: true, frameSource: "libunwind", problem: "truncated",
                scope: ["route": "/"], frames: [frame])
        ]
        report.omittedFrames = .init(omittedAfterIndex: 3, count: 100)
        report.frameSource = "libunwind"
        report.symbolicated = true
        var image = CrashReport.Image(path: "/usr/bin/app", bias: "0x0", start: "0x1000", end: "0x2000", buildID: "ab")
        image.buildIDMatches = false
        report.images = [image]
        report.logTail = ["line"]
        report.metadata = ["k": "v"]
        report.annotations = ["a": "b"]
        report.scope = ["route": "/pay"]
        report.notes = ["note"]
        report.termination = .init(
            cause: "oom-killer", lastSeenAlive: Date(timeIntervalSince1970: 1_795_300_779.123),
            detectedAt: Date(timeIntervalSince1970: 1_795_300_800), cgroupOOMKillsBefore: 1, cgroupOOMKillsAfter: 2)
        return report
    }

    /// The paths of stored properties that are nil or empty anywhere in `value` (the fixture must set
    /// every one, so that a field `encoded()` forgets shows as a difference).
    static func unsetFields(of value: Any, path: String = "report") -> [String] {
        let mirror = Mirror(reflecting: value)
        if mirror.displayStyle == .optional {
            guard let wrapped = mirror.children.first?.value else { return [path] }
            return unsetFields(of: wrapped, path: path)
        }
        if mirror.displayStyle == .collection || mirror.displayStyle == .dictionary {
            guard let first = mirror.children.first?.value else { return [path] }
            return mirror.displayStyle == .collection ? unsetFields(of: first, path: path + "[0]") : []
        }
        guard mirror.displayStyle == .struct, !(value is UUID), !(value is Date) else { return [] }
        return mirror.children.flatMap { child in unsetFields(of: child.value, path: path + "." + (child.label ?? "?"))
        }
    }
}
