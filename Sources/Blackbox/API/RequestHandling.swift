extension Blackbox {
    /// What a framework integration does around each request: runs `handle` in `scope` and captures
    /// server errors — a thrown error whose status (`statusOfError`, 500 when it has none) is 5xx,
    /// and a returned response whose `status` is 5xx (as `ServerErrorResponse`, at warning). 4xx are
    /// the client's and are not reported. The error is rethrown and the response returned unchanged.
    /// Every request is counted for the release's request health (`RequestTally`): served, failed
    /// with a server error, or in flight when the process died.
    public static func handleRequest<Response>(
        in scope: DiagnosticScope, isolation: isolated (any Actor)? = #isolation,
        status: (Response) -> Int, statusOfError: (any Error) -> Int?,
        handle: () async throws -> Response
    ) async throws -> Response {
        let tally = RequestTally.shared
        tally.requestStarted()
        return try await withRequestScope(scope, isolation: isolation) {
            do {
                let response = try await handle()
                let code = status(response)
                tally.requestEnded(serverError: code >= 500)
                if code >= 500 { capture(ServerErrorResponse(status: code), level: .warning) }
                return response
            } catch {
                let serverError = statusOfError(error) ?? 500 >= 500
                tally.requestEnded(serverError: serverError)
                if serverError { capture(error) }
                throw error
            }
        }
    }
}

/// A response with a 5xx status that a handler returned instead of throwing: captured by the framework
/// integrations, so that every server error is reported, thrown or not.
public struct ServerErrorResponse: Error, CustomStringConvertible {
    public var status: Int
    public init(status: Int) { self.status = status }
    public var description: String { "the handler answered \(status)" }
}
