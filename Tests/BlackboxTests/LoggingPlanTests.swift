import BlackboxTestSupport
import Foundation
import Logging
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

    @Test("a datagram destination gets one datagram per record, the file every line, in order")
    func datagramPerRecord() throws {
        var sockets: [Int32] = [-1, -1]
        #expect(socketpair(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0, &sockets) == 0)
        defer { for socket in sockets { close(socket) } }
        var plan = try LoggingCore.Plan(testConfiguration(directory), environment: environment())
        plan.outputs.append(.init(destination: .datagram(sockets[0]), format: .text))
        let core = try LoggingCore(plan: plan)
        defer { core.shutdown() }
        let log = Logger(label: "dgram") { BlackboxLogHandler(label: $0, core: core) }
        for i in 0..<50 { log.info("line \(i)\(i == 7 ? "\nwith a second line" : "")") }
        #expect(core.flush())

        var received: [String] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = recv(sockets[1], &buffer, buffer.count, Int32(MSG_DONTWAIT))
            guard count > 0 else { break }
            received.append(String(decoding: buffer[..<count], as: UTF8.self))
        }
        #expect(received.count == 50)
        for (i, datagram) in received.enumerated() {
            #expect(datagram.contains("INFO  dgram: line \(i)"), "\(datagram)")
            #expect(datagram.hasSuffix("\n"))
        }
        #expect(received.count > 7 && received[7].contains("with a second line"))
        #expect(logLines(directory).filter { $0.contains("dgram: line") }.count == 50)
    }
}
