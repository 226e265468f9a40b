import Foundation
import Hummingbird

/// `/project`: the project's name and id, the DSN its SDKs send to, and its keys.
struct ProjectPage: PageModel {
    static let template = "project"

    struct Key: Encodable {
        let id: Int64
        let kind: String
        let prefix: String
        let createdAt: String
        let state: String
    }

    let title = "Project"
    let name: String
    let id: Int64
    let publicURL: String
    let dsnTemplate: String
    let keys: [Key]

    /// - Parameter publicURL: the collector's address as SDKs reach it; nil: the one the browser used.
    static func routes(store: any CollectorStore, publicURL: String?, pages: PageRenderer)
        -> RouteCollection<AuthenticatedContext>
    {
        let routes = RouteCollection(context: AuthenticatedContext.self)
        routes.get("project") { request, context in
            let projectID = context.scope.projectID
            let project = try await store.projects().first { $0.id == projectID }
            let keys = try await store.keys().filter { $0.projectID == projectID }
            let base = publicURL ?? "http://\(request.head.authority ?? "localhost")"
            return pages.render(
                ProjectPage(
                    name: project?.name ?? "", id: projectID, publicURL: base,
                    dsnTemplate: SentryAuthentication.dsn(
                        publicURL: base, ingestKey: "<ingest key>", projectID: projectID
                    ).removingPercentEncoding ?? "",
                    keys: keys.map { key in
                        Key(
                            id: key.id, kind: key.kind.rawValue, prefix: key.prefix, createdAt: iso(key.createdAt),
                            state: key.revokedAt.map { "revoked \(iso($0))" } ?? "active")
                    }))
        }
        return routes
    }
}
