import Hummingbird

/// The server-rendered web UI: one page per file in Web/Pages (its view model and its routes), each
/// rendered with its template in Web/Templates. A new page is a file there and a line here.
struct WebUI {
    let store: any CollectorStore
    let reader: BundleReader
    /// The symbolizer the collector symbolicates with, or nil (the symbols page says so).
    let symbolizer: String?
    /// Where symbol files are, for deleting them from the symbols page.
    let symbolBlobs: any BlobStorage
    let pages: PageRenderer
    let sessions: WebSessions
    /// The collector's address as SDKs reach it (`--public-url`); nil: the address the browser used.
    var publicURL: String? = nil

    /// The pages behind a session (or the admin token): every one reads one project.
    func register(on group: RouterGroup<AuthenticatedContext>) {
        group.addRoutes(GroupsPage.routes(store: store, pages: pages))
        group.addRoutes(GroupPage.routes(store: store, pages: pages))
        group.addRoutes(ReportPage.routes(store: store, symbolBlobs: symbolBlobs, pages: pages))
        group.addRoutes(
            SymbolsPage.routes(store: store, symbolBlobs: symbolBlobs, symbolizer: symbolizer, pages: pages))
        group.addRoutes(ReleasesPage.routes(store: store, pages: pages))
        group.addRoutes(ProjectPage.routes(store: store, publicURL: publicURL, pages: pages))
        group.addRoutes(AlertsPage.routes(store: store, pages: pages))
        group.addRoutes(BundlesPage.routes(store: store, pages: pages))
        group.addRoutes(FilePage.routes(store: store, reader: reader, pages: pages))
        group.addRoutes(TracePage.routes(store: store, pages: pages))
        group.addRoutes(LogsPage.routes(store: store, pages: pages))
    }

    /// The pages a browser reaches without a session: signing in and out.
    func registerSignIn(on router: Router<CollectorContext>) {
        router.addRoutes(SignInPage.routes(store: store, sessions: sessions, pages: pages))
    }
}
