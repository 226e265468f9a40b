import Blackbox
import BlackboxHummingbird
import BlackboxServiceLifecycle
import Foundation
import Hummingbird
import Logging
import ServiceLifecycle

// Usage: hummingbird-service DIRECTORY [PORT]  (port 0: any free port; the bound one is printed as
// "listening on PORT" on stderr).
//
//   GET /items/{id}   the price of item `id`; ids past the price list crash (index out of range);
//                     ?after=MS waits that long first
//   GET /pay          throws: a 500, reported as a captured error
//   GET /slow         answers after 300 ms (requests in flight, each in its scope)
//   GET /health       "ok"

let arguments = CommandLine.arguments
let directory = arguments.count > 1 ? arguments[1] : ".run/hummingbird-service"
let port = arguments.count > 2 ? Int(arguments[2]) ?? 8080 : 8080

// First thing in main: before Hummingbird builds its loggers.
var configuration = BlackboxConfiguration(appName: "hummingbird-service", directory: directory)
configuration.appVersion = "1.0.0"
// With swift-otel: configuration.metadataProvider = OTel.makeLoggingMetadataProvider()
let blackbox = try Blackbox.start(configuration)

let prices = [120, 80, 45]

enum PaymentError: Error {
    case declined(order: String)
}

let router = Router()
router.add(middleware: BlackboxRequestMiddleware())
router.get("/health") { _, _ in "ok" }
router.get("/slow") { _, _ -> String in
    try await Task.sleep(for: .milliseconds(300))
    return "slow\n"
}
router.get("/pay") { _, _ -> String in
    throw PaymentError.declined(order: "o-17")
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
let services = ServiceGroup(
    services: [blackbox, app], gracefulShutdownSignals: [.sigterm, .sigint],
    logger: Blackbox.applicationLogger(label: "services"))
try await services.run()
