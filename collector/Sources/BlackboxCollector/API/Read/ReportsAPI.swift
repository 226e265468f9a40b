import BlackboxFormat
import Hummingbird

/// `/api/v1`: one report as JSON, and where its symbolication on the collector stands.
enum ReportsAPI {
    static func routes(store: ReadAPI.Store) -> RouteCollection<AuthenticatedContext> {
        let routes = RouteCollection(context: AuthenticatedContext.self)
        routes.get("reports/:id") { _, context in
            guard let stored = try await store.report(id: try context.id(), in: context.scope) else {
                throw APIError.notFound("report")
            }
            return Response(
                status: .ok, headers: [.contentType: "application/json; charset=utf-8"],
                body: .init(byteBuffer: ByteBuffer(bytes: stored.report.encoded())))
        }
        // What the crash most likely was (`CrashDiagnosis`: `kind` and `summary`); 404 for a report
        // without a signal (non-fatal, hang, unseen death) or one no rule fits.
        routes.get("reports/:id/diagnosis") { _, context in
            guard let stored = try await store.report(id: try context.id(), in: context.scope) else {
                throw APIError.notFound("report")
            }
            guard let diagnosis = stored.report.diagnosis else { throw APIError.notFound("diagnosis of the report") }
            return try JSONResponse.make(diagnosis)
        }
        // Where the report is in symbolication on the collector (`failed` says why).
        routes.get("reports/:id/symbolication") { _, context in
            guard let stored = try await store.report(id: try context.id(), in: context.scope) else {
                throw APIError.notFound("report")
            }
            guard let symbolication = stored.symbolication else {
                throw APIError.notFound("symbolication of the report")
            }
            return try JSONResponse.make(symbolication)
        }
        return routes
    }
}
