import Foundation
import Hummingbird

/// `/api/v1`: releases: each app version's session counts; losses: what senders dropped before arrival.
enum ReleasesAPI {
    static func routes(store: ReadAPI.Store) -> RouteCollection<AuthenticatedContext> {
        let routes = RouteCollection(context: AuthenticatedContext.self)
        routes.get("releases") { request, context in
            let page = request.page
            let releases = try await store.releases(in: context.scope, page: page)
            return try JSONResponse.make(PageOf(releases, page: page, path: "/api/v1/releases"))
        }
        // What senders lost before arrival, the last `days` days (default 30, at most 366).
        routes.get("losses") { request, context in
            let days = request.queryDictionary["days"].flatMap(Int.init).map { min(max($0, 1), 366) } ?? 30
            let since = Date(timeIntervalSince1970: Double(ReleaseStatements.day(Date()) - Int64(days - 1)) * 86_400)
            return try JSONResponse.make(["items": try await store.losses(in: context.scope, since: since)])
        }
        return routes
    }
}
