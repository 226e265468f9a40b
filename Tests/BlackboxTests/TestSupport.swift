import BlackboxTestSupport
import Foundation
import Logging
import Synchronization
import Testing

@testable import Blackbox

extension TemporaryDirectory {
    var logs: String { "\(path)/logs" }
}

/// A clock the test moves by hand.
final class ManualClock: Sendable {
    let now: Atomic<UInt64>
    init(_ start: UInt64 = 1_795_000_000_000_000_000) { now = Atomic(start) }
    func advance(by duration: Duration) { now.add(duration.nanoseconds, ordering: .relaxed) }
    var read: @Sendable () -> UInt64 { { [self] in now.load(ordering: .relaxed) } }
}

/// A count that threads add to.
final class SharedCount: Sendable {
    private let count = Atomic<Int>(0)
    var value: Int { count.load(ordering: .relaxed) }
    func add(_ n: Int = 1) { count.add(n, ordering: .relaxed) }
}

func testConfiguration(_ directory: TemporaryDirectory, appName: String = "test") -> BlackboxConfiguration {
    var configuration = BlackboxConfiguration(appName: appName, directory: directory.path)
    configuration.sinks = [.file]
    configuration.journalSize = 256 << 10
    configuration.levels = LevelSettings(defaultLevel: .trace)
    configuration.retention.compressArchives = false
    return configuration
}

func logLines(_ directory: TemporaryDirectory, base: String = "test") -> [String] {
    let text = (try? String(contentsOfFile: "\(directory.logs)/\(base).log", encoding: .utf8)) ?? ""
    return text.split(separator: "\n").map(String.init)
}

/// Every line of the active file and all archives (gzip ones decompressed), oldest archive first.
func allLogLines(_ directory: TemporaryDirectory, base: String = "test") throws -> [String] {
    let archives = directoryEntries(directory.logs).compactMap { ArchiveName(fileName: $0, baseName: base) }.sorted()
    var lines: [String] = []
    for archive in archives {
        let path = "\(directory.logs)/\(archive.fileName)"
        let bytes =
            archive.compressed ? try Gzip.decompress(path) : Array(FileManager.default.contents(atPath: path) ?? Data())
        lines += String(decoding: bytes, as: UTF8.self).split(separator: "\n").map(String.init)
    }
    return lines + logLines(directory, base: base)
}

/// Writes a text record (label "t") straight into `journal`; `commit: false` leaves it as a kill
/// mid-write would.
@discardableResult
func putRecord(_ journal: Journal, _ text: String, commit: Bool = true) throws -> (
    record: UnsafeMutableRawPointer, position: UInt64
) {
    let message = Array(text.utf8)
    let size = RecordLayout.headerSize + 1 + message.count
    let (record, position) = try #require(journal.tryReserve(size))
    var writer = RecordWriter(base: record)
    Array("t".utf8).withUnsafeBytes { writer.append($0) }
    message.withUnsafeBytes { writer.append($0) }
    writer.writeHeader(
        timestamp: 1_795_000_000_000_000_000, threadID: 1, line: 1, kind: .text, level: .info, labelCount: 1,
        fileCount: 0, flags: [], messageCount: message.count, metadataCount: 0)
    if commit {
        journal.commit(record, position: position, length: size)
    } else {
        record.storeBytes(of: UInt32(size), toByteOffset: RecordLayout.length, as: UInt32.self)
    }
    return (record, position)
}

/// Where the helper executables are: `BLACKBOX_TEST_BIN` (the Makefile sets it), else next to the test bundle.
func helperExecutable(_ name: String) -> String {
    if let bin = ProcessInfo.processInfo.environment["BLACKBOX_TEST_BIN"] { return "\(bin)/\(name)" }
    let here = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
    return here.appendingPathComponent(name).path
}

struct ChildResult {
    var status: Int32
    var signaled: Bool
    var stdout: String
    var stderr: String
}

/// Runs a helper to completion.
func runChild(_ name: String, _ arguments: [String], environment: [String: String] = [:]) throws -> ChildResult {
    try runProgram(helperExecutable(name), arguments, environment: environment)
}

/// Runs a system command to completion.
func runCommand(_ path: String, _ arguments: [String]) throws -> ChildResult {
    try runProgram(path, arguments)
}

/// Starts a helper and waits for it to print "ready"; its stderr goes to the test's.
func startChild(_ name: String, _ arguments: [String]) throws -> Process {
    try startProgram(helperExecutable(name), arguments, standardError: .standardError)
}

/// A record built by hand, for formatter tests.
func withRecord<T>(
    label: String = "net", file: String = "App/main.swift", line: UInt32 = 12, level: LogLevel = .info,
    kind: RecordKind = .text, message: [UInt8], metadata: [(String, String)] = [], timestamp: UInt64,
    _ body: (RecordView) -> T
) -> T {
    let encoded = EncodedMetadata(entries: metadata.map { (key: $0.0, value: $0.1) })
    let size = RecordLayout.headerSize + label.utf8.count + file.utf8.count + message.count + encoded.byteCount
    let base = UnsafeMutableRawPointer.allocate(byteCount: size, alignment: 8)
    defer { base.deallocate() }
    var writer = RecordWriter(base: base)
    Array(label.utf8).withUnsafeBytes { writer.append($0) }
    Array(file.utf8).withUnsafeBytes { writer.append($0) }
    message.withUnsafeBytes { writer.append($0) }
    encoded.write(into: &writer)
    writer.writeHeader(
        timestamp: timestamp, threadID: 7, line: line, kind: kind, level: level, labelCount: label.utf8.count,
        fileCount: file.utf8.count, flags: [], messageCount: message.count, metadataCount: encoded.byteCount)
    base.storeBytes(of: UInt32(size), toByteOffset: RecordLayout.length, as: UInt32.self)
    return body(RecordView(base: base))
}

func formatted(_ format: LogFormat, _ record: RecordView) -> String {
    String(decoding: rawFormatted(format, record), as: UTF8.self)
}

/// A formatted line's bytes as written (a `String` would hide bytes that are not UTF-8).
func rawFormatted(_ format: LogFormat, _ record: RecordView) -> [UInt8] {
    var formatter = LineFormatter(format: format)
    var out = OutputBuffer(capacity: 64)
    formatter.append(record, to: &out)
    return Array(out.bytes)
}

/// Runs any program to completion (a helper by absolute path, or a system tool), failing with
/// `ChildTimeout` (the child killed) if it outlives `deadline`. Its output goes to files, not pipes: a
/// pipe's write end that a sibling spawned at the same moment inherits would keep the reader from
/// ever seeing the end while that sibling lives (`ChildRun`, `ChildExit`).
func runProgram(
    _ path: String, _ arguments: [String], environment: [String: String] = [:], input: String? = nil,
    within deadline: Duration = ChildExit.defaultDeadline
) throws -> ChildResult {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: path)
    process.arguments = arguments
    var env = ProcessInfo.processInfo.environment
    env["BLACKBOX_LOG_LEVEL"] = nil
    for (key, value) in environment { env[key] = value }
    process.environment = env
    let output = TemporaryDirectory(prefix: "child-output")
    defer { output.remove() }
    let outPath = "\(output.path)/stdout"
    let errPath = "\(output.path)/stderr"
    _ = FileManager.default.createFile(atPath: outPath, contents: nil)
    _ = FileManager.default.createFile(atPath: errPath, contents: nil)
    let out = try FileHandle(forWritingTo: URL(fileURLWithPath: outPath))
    let err = try FileHandle(forWritingTo: URL(fileURLWithPath: errPath))
    process.standardOutput = out
    process.standardError = err
    let stdinPipe = Pipe()
    process.standardInput = input == nil ? FileHandle.nullDevice : stdinPipe
    defer {
        try? out.close()
        try? err.close()
    }
    try process.run()
    if let input {
        stdinPipe.fileHandleForWriting.write(Data(input.utf8))
        try? stdinPipe.fileHandleForWriting.close()
    }
    let outcome = try process.waitForOutcome(within: deadline)
    return ChildResult(
        status: outcome.signal ?? outcome.status, signaled: outcome.signal != nil,
        stdout: String(decoding: FileManager.default.contents(atPath: outPath) ?? Data(), as: UTF8.self),
        stderr: String(decoding: FileManager.default.contents(atPath: errPath) ?? Data(), as: UTF8.self))
}

/// Starts a program and waits until it prints "ready".
func startProgram(
    _ path: String, _ arguments: [String], environment: [String: String] = [:],
    standardError: FileHandle = .nullDevice
) throws -> Process {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: path)
    process.arguments = arguments
    var env = ProcessInfo.processInfo.environment
    for (key, value) in environment { env[key] = value }
    process.environment = env
    let out = Pipe()
    process.standardOutput = out
    process.standardError = standardError
    try process.run()
    var seen = Data()
    while !String(decoding: seen, as: UTF8.self).contains("ready") {
        let chunk = out.fileHandleForReading.availableData
        if chunk.isEmpty { break }
        seen += chunk
    }
    return process
}
