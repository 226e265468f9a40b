import Foundation
import Hummingbird

/// `/bundles`: the bundles received, newest first; `/bundles/:id`: one bundle's files (`BundlePage`).
struct BundlesPage: PageModel {
    static let template = "bundles"

    struct Row: Encodable {
        let id: Int64
        let receivedAt: String
        let appName: String
        let appVersion: String
        let host: String
        let size: Int64
        let fileCount: Int
        let reportCount: Int
    }

    let title = "Bundles"
    let hasBundles: Bool
    let bundles: [Row]
    let next: String?

    static func routes(store: any CollectorStore, pages: PageRenderer) -> RouteCollection<AuthenticatedContext> {
        let routes = RouteCollection(context: AuthenticatedContext.self)
        routes.get("bundles") { request, context in
            let page = request.page
            let bundles = try await store.bundles(in: context.scope, page: page)
            return pages.render(
                BundlesPage(
                    hasBundles: !bundles.isEmpty,
                    bundles: bundles.map { bundle in
                        Row(
                            id: bundle.id, receivedAt: iso(bundle.receivedAt), appName: bundle.appName ?? "",
                            appVersion: bundle.appVersion ?? "", host: bundle.host ?? "", size: bundle.size,
                            fileCount: bundle.fileCount, reportCount: bundle.reportCount)
                    },
                    next: bundles.count == page.limit ? "/bundles?offset=\(page.offset + page.limit)" : nil))
        }
        routes.get("bundles/:id") { _, context in
            let id = try context.id()
            guard let bundle = try await store.bundle(id: id, in: context.scope) else { return pages.notFound() }
            let files = try await store.files(bundleID: id, in: context.scope)
            return pages.render(BundlePage(bundle: bundle, files: files))
        }
        return routes
    }
}

struct BundlePage: PageModel {
    static let template = "bundle"

    struct File: Encodable {
        let id: Int64
        let path: String
        let kind: String
        let size: Int64
        let isLog: Bool
    }

    let title: String
    let bundle: BundleRecord
    let receivedAt: String
    let files: [File]

    init(bundle: BundleRecord, files: [BundleFile]) {
        title = "Bundle \(bundle.id)"
        self.bundle = bundle
        receivedAt = iso(bundle.receivedAt)
        self.files = files.map {
            File(id: $0.id, path: $0.path, kind: $0.kind.rawValue, size: $0.size, isLog: $0.kind == .log)
        }
    }
}
