import Hummingbird

/// Per-request state: the authenticated key, set by `AdminAuthentication` for read routes.
struct CollectorContext: RequestContext {
    var coreContext: CoreRequestContextStorage
    var key: APIKey?

    init(source: Source) {
        self.coreContext = .init(source: source)
        self.key = nil
    }

    /// Bodies are streamed by the ingest route itself; nothing else decodes large bodies.
    var maxUploadSize: Int { 1 << 20 }

    /// The project of the authenticated key (read routes only run once it is set).
    var projectID: Int64 { key?.projectID ?? -1 }
}
