import BlackboxSystem
import BlackboxTestSupport
import Foundation
import Logging
import Synchronization
import Testing

@testable import Blackbox

#if canImport(Glibc)
    import Glibc
#endif

/// A core's plan is a value (what it will open, decided from the configuration and the environment),
/// and the writer serves whatever destinations the plan lists.
@Suite("Logging plan and destinations")
struct LoggingPlanTests {
    let directory = TemporaryDirectory()

    func environment(logLevel: String? = nil, noColor: Bool = false, terminal: Bool = true)
        -> LoggingCore.Plan.Environment
    {
        LoggingCore.Plan.Environment(logLevel: logLevel, noColor: noColor, standardErrorIsTerminal: terminal)
    }

    @Test("each sink becomes one output: the file in its format, text on stderr, JSON Lines on stdout")
    func outputsFromSinks() throws {
        var configuration = testConfiguration(directory)
        configuration.sinks = [.file, .console, .standardOutput]
        configuration.format = .jsonLines
        let plan = try LoggingCore.Plan(configuration, environment: environment())
        #expect(
            plan.outputs == [
                .init(destination: .file, format: .jsonLines),
                .init(destination: .stream(2), format: .text, colored: true),
                .init(destination: .stream(1), format: .jsonLines),
            ])
        #expect(plan.writesFile)
        configuration.sinks = [.console]
        let consoleOnly = try LoggingCore.Plan(configuration, environment: environment())
        #expect(consoleOnly.outputs.map(\.destination) == [.stream(2)])
        #expect(!consoleOnly.writesFile)
    }

    @Test(
        "the console's format: text on stderr and JSON Lines on stdout unless configured or BLACKBOX_CONSOLE_FORMAT says"
    )
    func consoleFormats() throws {
        var configuration = testConfiguration(directory)
        configuration.sinks = [.file, .console, .standardOutput]
        func formats(_ environment: LoggingCore.Plan.Environment) throws -> [LogFormat] {
            try LoggingCore.Plan(configuration, environment: environment).outputs.map(\.format)
        }
        #expect(try formats(environment()) == [.text, .text, .jsonLines])
        var ecs = environment()
        ecs.consoleFormat = "ecs"
        let plan = try LoggingCore.Plan(configuration, environment: ecs)
        #expect(plan.outputs.map(\.format) == [.text, .ecs, .ecs])
        #expect(plan.outputs[1].colored == false, "colour is for text only")
        configuration.console.format = .logfmt
        #expect(try formats(environment()) == [.text, .logfmt, .logfmt])
        var bad = environment()
        bad.consoleFormat = "yaml"
        let refused = try LoggingCore.Plan(configuration, environment: bad)
        #expect(refused.outputs.map(\.format) == [.text, .logfmt, .logfmt])
        #expect(refused.environmentProblem?.contains("BLACKBOX_CONSOLE_FORMAT=yaml") == true)
        for (name, format) in [("JSON", LogFormat.jsonLines), ("text", .text), ("logfmt", .logfmt), ("ecs", .ecs)] {
            #expect(LogFormat(name: name) == format)
        }
    }

    @Test("console colour: automatic on a terminal unless NO_COLOR; always and never as told")
    func colours() throws {
        var configuration = testConfiguration(directory)
        configuration.sinks = [.console]
        func colored(_ environment: LoggingCore.Plan.Environment) throws -> Bool? {
            try LoggingCore.Plan(configuration, environment: environment).outputs.first?.colored
        }
        #expect(try colored(environment(terminal: true)) == true)
        #expect(try colored(environment(noColor: true, terminal: true)) == false)
        #expect(try colored(environment(terminal: false)) == false)
        configuration.console.color = .always
        #expect(try colored(environment(noColor: true, terminal: false)) == true)
        configuration.console.color = .never
        #expect(try colored(environment(terminal: true)) == false)
    }

    @Test("BLACKBOX_LOG_LEVEL adjusts the configured levels; a bad value is a problem to report, not an error")
    func environmentLevels() throws {
        var configuration = testConfiguration(directory)
        configuration.levels = LevelSettings(defaultLevel: .info)
        let adjusted = try LoggingCore.Plan(configuration, environment: environment(logLevel: "warning,db=trace"))
        #expect(adjusted.configuration.levels.defaultLevel == .warning)
        #expect(adjusted.configuration.levels.labelLevels["db"] == .trace)
        #expect(adjusted.environmentProblem == nil)
        let bad = try LoggingCore.Plan(configuration, environment: environment(logLevel: "loudest"))
        #expect(bad.configuration.levels.defaultLevel == .info)
        #expect(bad.environmentProblem?.contains("ignored, the configured levels apply") == true)
    }

    @Test("a base name with a slash or a file limit under 4 KB is refused before anything is opened")
    func refusals() {
        var configuration = testConfiguration(directory)
        configuration.baseFileName = "../escape"
        #expect(throws: BlackboxError.self) { try LoggingCore.Plan(configuration, environment: environment()) }
        configuration.baseFileName = "app"
        configuration.rotation.maxFileSize = 1024
        #expect(throws: BlackboxError.self) { try LoggingCore.Plan(configuration, environment: environment()) }
        #expect(!FileManager.default.fileExists(atPath: directory.logs))
    }

    @Test("instances: the first keeps the base name, later ones get .<n>; at least one journal is tried")
    func instances() throws {
        var configuration = testConfiguration(directory)
        configuration.maxInstances = 0
        let plan = try LoggingCore.Plan(configuration, environment: environment())
        #expect(plan.instanceLimit == 1)
        #expect(plan.logBaseName(instance: 0) == "test")
        #expect(plan.logBaseName(instance: 2) == "test.2")
        #expect(plan.journalPath(instance: 0) != plan.journalPath(instance: 1))
    }

    @Test(
        "Sinks.journald lists a journal output with the app's name as identifier; with no socket it is text on stderr")
    func journaldOutput() throws {
        var configuration = testConfiguration(directory)
        configuration.sinks = [.file, .journald]
        configuration.journald.socketPath = "\(directory.path)/no-journal"
        let plan = try LoggingCore.Plan(configuration, environment: environment())
        var expected = configuration.journald
        expected.identifier = "test"
        #expect(plan.outputs.map(\.destination) == [.file, .journald(expected)])
        #expect(plan.outputs[1].available() == .init(destination: .stream(2), format: .text))
        configuration.journald.identifier = "shop-api"
        let named = try LoggingCore.Plan(configuration, environment: environment())
        guard case .journald(let options) = named.outputs[1].destination else {
            Issue.record("no journald output")
            return
        }
        #expect(options.identifier == "shop-api")
    }

    @Test(
        "a journald output sends one native-protocol entry per record; an entry too big for a datagram goes as a sealed memfd"
    )
    func journaldEntries() throws {
        let receiver = try JournalSocketReceiver(path: "\(directory.path)/journal.socket")
        var configuration = testConfiguration(directory)
        configuration.sinks = [.file, .journald]
        configuration.journald.socketPath = receiver.path
        configuration.journald.identifier = "entries"
        // This receiver parses as it reads: let the writer wait for it (the budget has a test of its own).
        configuration.journald.maxWaitPerBatch = .seconds(10)
        configuration.journalSize = 4 << 20
        let core = try LoggingCore(plan: LoggingCore.Plan(configuration, environment: environment()))
        defer { core.shutdown() }
        let log = Logger(label: "dgram") { BlackboxLogHandler(label: $0, core: core) }
        for i in 0..<50 { log.info("line \(i)\(i == 7 ? "\nwith a second line" : "")", metadata: ["n": "\(i)"]) }
        let big = String(repeating: "0123456789abcdef", count: 300_000 / 16)
        log.warning("\(big)", metadata: ["priority": "collides", "Http.Method": "GET"])
        #expect(core.flush())

        let entries = try receiver.entries(count: 51)
        #expect(entries.count == 51)
        for (i, entry) in entries.prefix(50).enumerated() {
            #expect(entry.values("MESSAGE") == ["line \(i)\(i == 7 ? "\nwith a second line" : "")"])
            #expect(entry.values("PRIORITY") == ["6"])
            #expect(entry.values("SYSLOG_IDENTIFIER") == ["entries"])
            #expect(entry.values("LOGGER") == ["dgram"])
            #expect(entry.values("N") == ["\(i)"])
            #expect(entry.values("CODE_FILE").first?.hasSuffix("LoggingPlanTests.swift") == true)
            #expect(Int(entry.values("CODE_LINE").first ?? "") ?? 0 > 0)
            #expect(Int(entry.values("TID").first ?? "") ?? 0 > 0)
            #expect(!entry.cameAsMemfd)
        }
        let last = try #require(entries.last)
        #expect(last.cameAsMemfd, "a 300 KB entry is over the socket's datagram size")
        #expect(last.wasSealed)
        let message = last.values("MESSAGE")
        let whole = message == [big]
        #expect(whole, "\(message.count) messages of \(message.map(\.count)) bytes, \(big.count) sent")
        #expect(last.values("PRIORITY") == ["4"])
        #expect(last.values("METADATA_PRIORITY") == ["collides"])
        #expect(last.values("HTTP_METHOD") == ["GET"])
        #expect(logLines(directory).filter { $0.contains("dgram: line") }.count == 50)
    }

    @Test("a journal that never reads holds the writer at most its wait per batch: the file gets every line")
    func journaldNeverReads() throws {
        let silent = try SilentDatagramSocket(path: "\(directory.path)/silent.socket")
        var configuration = testConfiguration(directory)
        configuration.sinks = [.file, .journald]
        configuration.journald.socketPath = silent.path
        configuration.journald.maxWaitPerBatch = .milliseconds(20)
        let core = try LoggingCore(plan: LoggingCore.Plan(configuration, environment: environment()))
        defer { core.shutdown() }
        let log = Logger(label: "silent") { BlackboxLogHandler(label: $0, core: core) }
        for batch in 0..<5 {
            for i in 0..<200 { log.info("line \(batch * 200 + i)") }
            // A writer waiting on the journal for every entry (no budget) would never get here.
            #expect(core.flush(timeout: .seconds(20)), "batch \(batch)")
        }
        #expect(logLines(directory).filter { $0.contains("silent: line") }.count == 1000)
        let queued = silent.queued()
        #expect(queued > 0 && queued < 1000, "the journal's queue holds what fitted: \(queued)")
    }

    @Test(
        "journal field names from metadata keys: upper case, A-Z 0-9 _, a letter first, 64 at most, never one of the entry's own"
    )
    func journaldFieldNames() {
        func name(_ key: String) -> String {
            var out = OutputBuffer(capacity: 16)
            Array(key.utf8).withUnsafeBytes { LineFormatter.appendFieldName(forKey: $0, to: &out) }
            return String(decoding: out.bytes, as: UTF8.self)
        }
        #expect(name("trace_id") == "TRACE_ID")
        #expect(name("http.method") == "HTTP_METHOD")
        #expect(name("request-id") == "REQUEST_ID")
        #expect(name("_private") == "PRIVATE")
        #expect(name("9lives") == "LIVES")
        #expect(name("__") == "METADATA")
        #expect(name("ключ") == "METADATA")
        #expect(name("message") == "METADATA_MESSAGE")
        #expect(name("Code_Line") == "METADATA_CODE_LINE")
        #expect(name("MESSAGE_ID") == "MESSAGE_ID")
        #expect(name(String(repeating: "k", count: 100)) == String(repeating: "K", count: 64))
        #expect(name("tid") == "METADATA_TID")
    }
}

/// An AF_UNIX datagram socket bound at `path`, where a journald output can send.
func boundDatagramSocket(at path: String) throws -> Int32 {
    let descriptor = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(path.utf8)) }
    let bound = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
        }
    }
    guard descriptor >= 0, bound == 0 else {
        let error = SystemCallError("bind")
        if descriptor >= 0 { close(descriptor) }
        throw error
    }
    return descriptor
}

/// A bound datagram socket nobody reads: a journal that is stuck.
struct SilentDatagramSocket: ~Copyable {
    let path: String
    private let descriptor: Int32

    init(path: String) throws {
        self.path = path
        descriptor = try boundDatagramSocket(at: path)
    }

    deinit {
        close(descriptor)
        unlink(path)
    }

    /// How many datagrams wait in the queue (read out now).
    func queued() -> Int {
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        var count = 0
        while recv(descriptor, &buffer, buffer.count, Int32(MSG_DONTWAIT)) >= 0 { count += 1 }
        return count
    }
}

/// A bound datagram socket standing in for journald's: a thread of its own receives what a journald
/// output sends, as journald does (a datagram socket's queue holds only a few datagrams), and parses the
/// native protocol (https://systemd.io/JOURNAL_NATIVE_PROTOCOL/), memfd entries included.
final class JournalSocketReceiver: Sendable {
    struct Entry: Sendable {
        var fields: [Field]
        var cameAsMemfd: Bool
        var wasSealed: Bool
        func values(_ name: String) -> [String] {
            fields.filter { $0.name == name }.map { String(decoding: $0.value, as: UTF8.self) }
        }
    }
    struct Field: Sendable {
        var name: String
        var value: [UInt8]
    }

    let path: String
    private let descriptor: Int32
    private let received = Mutex<[Result<Entry, Malformed>]>([])
    private let stopping = Atomic<Bool>(false)
    private let done = DispatchSemaphore(value: 0)

    init(path: String) throws {
        self.path = path
        descriptor = try boundDatagramSocket(at: path)
        var timeout = timeval(tv_sec: 0, tv_usec: 50_000)
        _ = setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        Thread.detachNewThread { [self] in
            while !stopping.load(ordering: .relaxed) {
                if let entry = receiveOne() { received.withLock { $0.append(entry) } }
            }
            done.signal()
        }
    }

    deinit {
        close(descriptor)
        unlink(path)
    }

    func stop() {
        stopping.store(true, ordering: .relaxed)
        done.wait()
    }

    /// The entries received once `count` arrived (or 10 s passed), in order; the reader stopped.
    func entries(count: Int) throws -> [Entry] {
        let deadline = ContinuousClock.now + .seconds(10)
        while received.withLock({ $0.count }) < count && ContinuousClock.now < deadline {
            usleep(10_000)
        }
        stop()
        return try received.withLock { $0 }.map { try $0.get() }
    }

    private func receiveOne() -> Result<Entry, Malformed>? {
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        var control = [UInt8](repeating: 0, count: 64)
        var count = 0
        var passed: Int32?
        buffer.withUnsafeMutableBytes { bytes in
            control.withUnsafeMutableBytes { control in
                var vector = iovec(iov_base: bytes.baseAddress, iov_len: bytes.count)
                withUnsafeMutablePointer(to: &vector) { vector in
                    var message = msghdr()
                    message.msg_iov = vector
                    message.msg_iovlen = 1
                    message.msg_control = control.baseAddress
                    message.msg_controllen = control.count
                    count = recvmsg(descriptor, &message, 0)
                    if count >= 0, message.msg_controllen >= MemoryLayout<cmsghdr>.size + 4 {
                        let header = control.load(as: cmsghdr.self)
                        if header.cmsg_level == SOL_SOCKET && header.cmsg_type == Int32(SCM_RIGHTS) {
                            passed = control.load(fromByteOffset: MemoryLayout<cmsghdr>.size, as: Int32.self)
                        }
                    }
                }
            }
        }
        guard count >= 0 else { return nil }
        guard let passed else {
            return Self.parse(Array(buffer[..<count])).map { Entry(fields: $0, cameAsMemfd: false, wasSealed: false) }
        }
        defer { close(passed) }
        var status = stat()
        _ = fstat(passed, &status)
        var content = [UInt8](repeating: 0, count: Int(status.st_size))
        guard pread(passed, &content, content.count, 0) == content.count else { return .failure(Malformed()) }
        let getSeals: Int32 = 1034  // F_GET_SEALS (linux/fcntl.h; Swift's Glibc does not declare it)
        let sealed = fcntl(passed, getSeals) & 0xF == 0xF
        return Self.parse(content).map { Entry(fields: $0, cameAsMemfd: true, wasSealed: sealed) }
    }

    struct Malformed: Error {}

    /// `NAME=value\n`, or `NAME\n` + u64 little-endian length + value + `\n`.
    static func parse(_ bytes: [UInt8]) -> Result<[Field], Malformed> {
        var fields: [Field] = []
        var i = 0
        while i < bytes.count {
            guard let end = bytes[i...].firstIndex(where: { $0 == UInt8(ascii: "=") || $0 == UInt8(ascii: "\n") })
            else { return .failure(Malformed()) }
            let name = String(decoding: bytes[i..<end], as: UTF8.self)
            if bytes[end] == UInt8(ascii: "=") {
                guard let newline = bytes[end...].firstIndex(of: UInt8(ascii: "\n")) else {
                    return .failure(Malformed())
                }
                fields.append(Field(name: name, value: Array(bytes[(end + 1)..<newline])))
                i = newline + 1
            } else {
                guard end + 9 <= bytes.count else { return .failure(Malformed()) }
                var length = 0
                for k in 0..<8 { length |= Int(bytes[end + 1 + k]) << (8 * k) }
                let start = end + 9
                guard start + length < bytes.count, bytes[start + length] == UInt8(ascii: "\n") else {
                    return .failure(Malformed())
                }
                fields.append(Field(name: name, value: Array(bytes[start..<(start + length)])))
                i = start + length + 1
            }
        }
        return .success(fields)
    }
}
