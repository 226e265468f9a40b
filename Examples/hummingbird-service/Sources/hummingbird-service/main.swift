import Blackbox
import BlackboxHummingbird
import BlackboxServiceLifecycle
import Foundation
import Hummingbird
import Logging
import ServiceLifecycle

#if Tracing
    import OTel
#endif

// Usage: hummingbird-service DIRECTORY [PORT]  (port 0: any free port; the bound one is printed as
// "listening on PORT" on stderr).
//
//   GET /items/{id}   the price of item `id`; ids past the price list crash (index out of range);
//                     ?after=MS waits that long first
//   GET /pay          throws: a 500, reported as a captured error
//   GET /slow         answers after 300 ms (requests in flight, each in its scope)
//   GET /health       "ok"
//
// TRACING=1 traces every request with swift-otel (spans exported nowhere, unless
// OTEL_TRACES_EXPORTER=otlp sends them to OTEL_EXPORTER_OTLP_ENDPOINT): its trace and span ids are in
// every log line of the request and in the request's scope, so a crash report names its trace. (A
// build without the package's Tracing trait has no swift-otel and ignores TRACING.)
//
// OTLP_LOGS=1 (with TRACING=1) also exports every log line with swift-otel's OTLP/HTTP exporter, to
// OTEL_EXPORTER_OTLP_LOGS_ENDPOINT with OTEL_EXPORTER_OTLP_LOGS_HEADERS (a Blackbox collector's
// `/v1/logs` and `authorization=Bearer <ingest key>`): swift-log bootstrapped by the app with a
// MultiplexLogHandler of Blackbox's handler and swift-otel's, as docs/servers.md shows.

let arguments = CommandLine.arguments
let directory = arguments.count > 1 ? arguments[1] : ".run/hummingbird-service"
let port = arguments.count > 2 ? Int(arguments[2]) ?? 8080 : 8080

// First thing in main: before Hummingbird builds its loggers.
var configuration = BlackboxConfiguration(appName: "hummingbird-service", directory: directory)
configuration.appVersion = "1.0.0"
#if Tracing
    let tracing = ProcessInfo.processInfo.environment["TRACING"] == "1"
    let otlpLogs = tracing && ProcessInfo.processInfo.environment["OTLP_LOGS"] == "1"
    if tracing { configuration.metadataProvider = OTel.makeLoggingMetadataProvider() }
#else
    let otlpLogs = false
#endif
// With OTLP logs the app bootstraps swift-log itself (below), with Blackbox's handler in it.
let blackbox = try Blackbox.start(configuration, bootstrapLogging: !otlpLogs)
#if Tracing
    /// swift-otel's log handler beside Blackbox's: every line goes to both, and the OTLP exporter's
    /// service (which sends the last batch at shutdown) runs in the group.
    func bootstrapOTLPLogs() throws -> any Service {
        var otel = OTel.Configuration.default
        otel.serviceName = "hummingbird-service"
        otel.traces.enabled = false
        otel.metrics.enabled = false
        otel.logs.otlpExporter.protocol = .httpProtobuf  // the OTEL_* environment variables override both
        otel.logs.otlpExporter.compression = .gzip
        let backend = try OTel.makeLoggingBackend(configuration: otel)
        let core = blackbox.core
        LoggingSystem.bootstrap { label in
            MultiplexLogHandler([BlackboxLogHandler(label: label, core: core), backend.factory(label)])
        }
        return backend.service
    }
    let logExport: [any Service] = otlpLogs ? [try bootstrapOTLPLogs()] : []
#endif
#if Tracing
    func tracingService() throws -> any Service {
        var otel = OTel.Configuration.default
        otel.serviceName = "hummingbird-service"
        // Blackbox is the log backend; metrics are not this example's subject.
        otel.logs.enabled = false
        otel.metrics.enabled = false
        otel.traces.exporter = .none  // the OTEL_* environment variables override it
        return try OTel.bootstrap(configuration: otel)
    }
    let services: [any Service] = (tracing ? [blackbox, try tracingService()] : [blackbox]) + logExport
#else
    let services: [any Service] = [blackbox]
#endif

let prices = [120, 80, 45]

enum PaymentError: Error {
    case declined(order: String)
}

let router = Router()
// The span first: the request's scope takes its trace and span ids from the metadata provider.
#if Tracing
    if tracing { router.add(middleware: TracingMiddleware()) }
#endif
router.add(middleware: BlackboxRequestMiddleware())
router.get("/health") { _, _ in "ok" }
router.get("/slow") { _, _ -> String in
    try await Task.sleep(for: .milliseconds(300))
    return "slow\n"
}
router.get("/pay") { _, _ -> String in
    // Marked: the error report (captured by the middleware) is grouped by this line, not the route.
    throw Blackbox.thrown(PaymentError.declined(order: "o-17"))
}
router.get("/items/{id}") { request, context -> String in
    if let after = request.uri.queryParameters.get("after", as: Int.self) {
        try await Task.sleep(for: .milliseconds(after))
    }
    let id = try context.parameters.require("id", as: Int.self)
    context.logger.info("pricing item", metadata: ["item": "\(id)"])
    return "\(prices[id])\n"
}

let app = Application(
    router: router,
    configuration: .init(address: .hostname("127.0.0.1", port: port)),
    onServerRunning: { channel in
        FileHandle.standardError.write(Data("listening on \(channel.localAddress?.port ?? 0)\n".utf8))
    },
    // LOG_LEVEL honoured through Blackbox's levels, not pinned on the logger.
    logger: Blackbox.applicationLogger(label: "hummingbird-service"))
// Blackbox first: the group stops services in reverse order, so on SIGTERM the server stops, then
// Blackbox ends delivery and drains the log.
let group = ServiceGroup(
    services: services + [app], gracefulShutdownSignals: [.sigterm, .sigint],
    logger: Blackbox.applicationLogger(label: "services"))
try await group.run()
