import Blackbox
import Foundation
import Hummingbird
import Logging
import ServiceLifecycle

// Usage: bench-server BACKEND DIRECTORY PORT
//
//   BACKEND   blackbox   Blackbox, file output, release defaults
//             blackbox-level6  the same with archives at zlib level 6 (the default is 3)
//             disabled   Blackbox with the line below the level (warning): the server's cost without the
//                        line (swift-log does not even build the call's metadata)
//             noop       a handler that merges the 8 values and drops them
//             stream     swift-log's StreamLogHandler, its standard output sent to DIRECTORY/stream.log
//
//   GET /orders/{id}   logs "order looked up" with 8 metadata values: Hummingbird's request id (the
//                      request logger's), three from the call, four from a metadata provider standing in
//                      for swift-otel's (trace and span ids, flags, service), and answers "ok"

let arguments = CommandLine.arguments
guard arguments.count == 4, let port = Int(arguments[3]) else {
    FileHandle.standardError.write(Data("usage: bench-server blackbox|disabled|noop|stream DIRECTORY PORT\n".utf8))
    exit(2)
}
let backend = arguments[1]
let directory = arguments[2]

/// The four values swift-otel's provider gives a line inside a span, computed per call as it does.
let tracingLikeProvider = Logger.MetadataProvider {
    [
        "trace_id": "4bf92f3577b34da6a3ce929d0e0e4736", "span_id": "00f067aa0ba902b7", "trace_flags": "01",
        "service.name": "bench-server",
    ]
}

/// What any handler that sees a call's metadata does first: the logger's, the provider's and the
/// call's merged; then dropped.
struct MergingNoOpHandler: LogHandler {
    var logLevel: Logger.Level = .info
    var metadata: Logger.Metadata = [:]
    var metadataProvider: Logger.MetadataProvider? = tracingLikeProvider

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        var merged = metadata
        merged.merge(metadataProvider?.get() ?? [:]) { _, new in new }
        merged.merge(event.metadata ?? [:]) { _, new in new }
        if merged.count == -1 { print("") }
    }
}

switch backend {
case "blackbox", "blackbox-level6", "disabled":
    var configuration = BlackboxConfiguration(appName: "bench-server", directory: directory)
    configuration.metadataProvider = tracingLikeProvider
    configuration.sinks = [.file]
    // The same with archives compressed at gzip's usual level 6 instead of the default 3.
    if backend == "blackbox-level6" { configuration.retention.compressionLevel = 6 }
    if backend == "disabled" { configuration.levels = LevelSettings(defaultLevel: .warning) }
    try Blackbox.start(configuration)
case "noop":
    LoggingSystem.bootstrap { _ in MergingNoOpHandler() }
case "stream":
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    let file = open("\(directory)/stream.log", O_WRONLY | O_CREAT | O_APPEND, 0o644)
    guard file >= 0, dup2(file, STDOUT_FILENO) >= 0 else {
        FileHandle.standardError.write(Data("cannot open \(directory)/stream.log\n".utf8))
        exit(1)
    }
    LoggingSystem.bootstrap(
        { label, provider in StreamLogHandler.standardOutput(label: label, metadataProvider: provider) },
        metadataProvider: tracingLikeProvider)
default:
    FileHandle.standardError.write(Data("unknown backend \(backend)\n".utf8))
    exit(2)
}

let router = Router()
router.get("/health") { _, _ in "ok" }
router.get("/orders/{id}") { _, context -> String in
    let id = context.parameters.get("id") ?? "?"
    context.logger.info("order looked up", metadata: ["order": "\(id)", "items": "3", "total": "42.50"])
    return "ok"
}

let app = Application(
    router: router,
    configuration: .init(address: .hostname("127.0.0.1", port: port)),
    onServerRunning: { _ in FileHandle.standardError.write(Data("listening\n".utf8)) },
    logger: Logger(label: "bench-server"))
let group = ServiceGroup(
    services: [app], gracefulShutdownSignals: [.sigterm, .sigint], logger: Logger(label: "services"))
try await group.run()
Blackbox.shutdown()  // drains the log (the runner counts the lines)
