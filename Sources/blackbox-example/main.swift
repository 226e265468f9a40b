import Blackbox
import Logging

#if canImport(Glibc)
    import Glibc
#endif

// An app that logs through Blackbox: `make run` builds and runs it.
let directory =
    CommandLine.arguments.dropFirst().first ?? BlackboxConfiguration.defaultDirectory(appName: "blackbox-example")
var configuration = BlackboxConfiguration(appName: "blackbox-example", directory: directory)
configuration.sinks = [.console, .file]
configuration.levels = LevelSettings(defaultLevel: .info, labelLevels: ["example.db": .debug])

let core: LoggingCore
do {
    core = try Blackbox.start(configuration)
} catch {
    FileHandleOutput.standardError("blackbox-example: \(error)")
    exit(1)
}
if core.recovery.records > 0 {
    print("recovered \(core.recovery.records) lines a previous run left in the journal")
}

var logger = Logger(label: "example.app")
logger[metadataKey: "run"] = "\(getpid())"
logger.info("example app started")
logger.notice("signed in", metadata: ["user": "\("alice@example.com", sensitivity: .sensitive)"])
Logger(label: "example.db").debug("connection pool ready", metadata: ["size": "4"])

if let fast = Blackbox.fastLogger("example.hot") {
    for i in 0..<5 {
        fast.info("request id=\(i) user=\("bob") took \(Double(i) * 1.5) ms ok=\(i % 2 == 0)")
    }
}
logger.warning("disk almost full", metadata: ["free": "3%"])
Blackbox.flush()

print("")
print("Blackbox directory: \(directory)")
print("Active log file:    \(directory)/logs/blackbox-example.log")
print("Journal:            \(directory)/journal")
print("Last lines:")
for line in Blackbox.recentLines(3) { print("  \(line)") }

enum FileHandleOutput {
    static func standardError(_ line: String) {
        let text = line + "\n"
        _ = text.utf8.withContiguousStorageIfAvailable { write(2, $0.baseAddress, $0.count) }
    }
}
