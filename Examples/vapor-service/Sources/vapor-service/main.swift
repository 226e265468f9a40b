import Blackbox
import BlackboxVapor
import Vapor

// Usage: VAPOR_SERVICE_DIR=DIRECTORY vapor-service serve --hostname 127.0.0.1 --port PORT [--log LEVEL]
//
//   GET /items/:id   the price of item `id`; ids past the price list crash (index out of range)
//   GET /pay         throws: a 500, reported as a captured error
//   GET /slow        answers after 300 ms (requests in flight, each in its scope)
//   GET /health      "ok"

var environment = try Environment.detect()
var configuration = BlackboxConfiguration(
    appName: "vapor-service", directory: Environment.get("VAPOR_SERVICE_DIR") ?? ".run/vapor-service")
configuration.appVersion = "1.0.0"
// With swift-otel: configuration.metadataProvider = OTel.makeLoggingMetadataProvider()
// In place of the template's LoggingSystem.bootstrap(from: &environment): keeps --log and LOG_LEVEL.
try Blackbox.start(configuration, from: &environment)

let prices = [120, 80, 45]

enum PaymentError: Error {
    case declined(order: String)
}

let app = try await Application.make(environment)
app.middleware.use(BlackboxRequestMiddleware())
app.get("health") { _ in "ok" }
app.get("slow") { _ async throws -> String in
    try await Task.sleep(for: .milliseconds(300))
    return "slow\n"
}
app.get("pay") { _ async throws -> String in
    throw PaymentError.declined(order: "o-17")
}
app.get("items", ":id") { request async throws -> String in
    let id = try request.parameters.require("id", as: Int.self)
    request.logger.info("pricing item", metadata: ["item": "\(id)"])
    return "\(prices[id])\n"
}
do {
    try await app.execute()
} catch {
    app.logger.report(error: error)
    try? await app.asyncShutdown()
    throw error
}
try await app.asyncShutdown()
