import Hummingbird

/// `/api/v1`: bundles, one bundle, its files, and one file's bytes.
enum BundlesAPI {
    static func routes(store: ReadAPI.Store, reader: BundleReader) -> RouteCollection<AuthenticatedContext> {
        let routes = RouteCollection(context: AuthenticatedContext.self)
        routes.get("bundles") { request, context in
            let page = request.page
            let bundles = try await store.bundles(in: context.scope, page: page)
            return try JSONResponse.make(PageOf(bundles, page: page, path: "/api/v1/bundles"))
        }
        routes.get("bundles/:id") { _, context in
            guard let bundle = try await store.bundle(id: try context.id(), in: context.scope) else {
                throw APIError.notFound("bundle")
            }
            return try JSONResponse.make(bundle)
        }
        routes.get("bundles/:id/files") { _, context in
            let id = try context.id()
            guard try await store.bundle(id: id, in: context.scope) != nil else { throw APIError.notFound("bundle") }
            return try JSONResponse.make(try await store.files(bundleID: id, in: context.scope))
        }
        routes.get("files/:id/content") { _, context in
            guard let file = try await store.file(id: try context.id(), in: context.scope),
                let bundle = try await store.bundle(id: file.bundleID, in: context.scope)
            else { throw APIError.notFound("file") }
            let name = file.path.split(separator: "/").last.map(String.init) ?? "file"
            let safeName = name.filter { $0.isLetter || $0.isNumber || ".-_".contains($0) }
            return Response(
                status: .ok,
                headers: [
                    .contentType: file.kind == .report ? "application/json" : "application/octet-stream",
                    .contentDisposition: "attachment; filename=\"\(safeName.isEmpty ? "file" : safeName)\"",
                ],
                body: FileStreamer(reader: reader).body(of: file.path, inBlob: bundle.blob))
        }
        return routes
    }
}
