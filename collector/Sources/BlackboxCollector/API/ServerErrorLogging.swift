import Hummingbird
import Logging

/// Every request that ends in a server error is logged with its error, once: a 500 nobody hears of
/// cannot be fixed.
struct ServerErrorLogging: RouterMiddleware {
    typealias Context = CollectorContext
    let logger = Logger(label: "collector.http")

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        do {
            let response = try await next(request, context)
            if response.status.code == 500 {
                logger.error("\(request.method) \(request.uri.path) answered \(response.status.code)")
            }
            return response
        } catch let error as any HTTPResponseError where error.status != .internalServerError {
            // A refusal (4xx, or 503 with Retry-After): the client is told why; nothing to fix here.
            throw error
        } catch {
            logger.error("\(request.method) \(request.uri.path) failed: \(error)")
            throw error
        }
    }
}
