import Hummingbird

/// The JSON read API under `/api/v1` (admin token), one file per resource in API/Read. Lists are
/// paginated with `limit` and `offset` and carry the link to the next page.
struct ReadAPI {
    typealias Store = any ProjectReader & SymbolicationStore & ReleaseStore
    let store: Store
    let reader: BundleReader

    func register(on group: RouterGroup<AuthenticatedContext>) {
        group.addRoutes(GroupsAPI.routes(store: store))
        group.addRoutes(ReleasesAPI.routes(store: store))
        group.addRoutes(ReportsAPI.routes(store: store))
        group.addRoutes(BundlesAPI.routes(store: store, reader: reader))
        group.addRoutes(LogsAPI.routes(store: store))
    }
}
