import Hummingbird

/// `/api/v1`: releases: each app version's session counts.
enum ReleasesAPI {
    static func routes(store: ReadAPI.Store) -> RouteCollection<AuthenticatedContext> {
        let routes = RouteCollection(context: AuthenticatedContext.self)
        routes.get("releases") { request, context in
            let page = request.page
            let releases = try await store.releases(in: context.scope, page: page)
            return try JSONResponse.make(PageOf(releases, page: page, path: "/api/v1/releases"))
        }
        return routes
    }
}
