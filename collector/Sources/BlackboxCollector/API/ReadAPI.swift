import BlackboxFormat
import Foundation
import Hummingbird

/// The JSON read API under `/api/v1` (admin token). Lists are paginated with `limit` and `offset` and
/// carry the link to the next page.
struct ReadAPI {
    let store: any ProjectReader & SymbolicationStore & ReleaseStore
    let reader: BundleReader

    func register(on group: RouterGroup<AuthenticatedContext>) {
        group.get("groups") { request, context in
            let page = request.page
            let query = try GroupQuery(parameters: request.queryDictionary)
            let groups = try await store.groups(in: context.scope, query: query, page: page)
            return try JSONResponse.make(
                PageOf(groups, page: page, path: "/api/v1/groups", extraQuery: query.queryString))
        }
        group.get("releases") { request, context in
            let page = request.page
            let releases = try await store.releases(in: context.scope, page: page)
            return try JSONResponse.make(PageOf(releases, page: page, path: "/api/v1/releases"))
        }
        group.get("groups/:id/trend") { _, context in
            let id = try context.id()
            guard try await store.group(id: id, in: context.scope) != nil else { throw APIError.notFound("group") }
            let now = Date()
            let hours = Trends.hours(24, endingAt: now)
            let days = Trends.days(30, endingAt: now)
            struct Series: Encodable {
                var since: Date
                var bucketSeconds: Int
                var counts: [Int]
            }
            struct Trend: Encodable {
                var hours: Series
                var days: Series
            }
            let byHour = try await store.occurrenceHistogram(
                groupIDs: [id], in: context.scope, since: hours.since, bucketSeconds: 3600, buckets: 24)
            let byDay = try await store.occurrenceHistogram(
                groupIDs: [id], in: context.scope, since: days.since, bucketSeconds: 86_400, buckets: 30)
            return try JSONResponse.make(
                Trend(
                    hours: Series(since: hours.since, bucketSeconds: 3600, counts: byHour[id] ?? []),
                    days: Series(since: days.since, bucketSeconds: 86_400, counts: byDay[id] ?? [])))
        }
        group.get("groups/:id") { request, context in
            guard let group = try await store.group(id: try context.id(), in: context.scope) else {
                throw APIError.notFound("group")
            }
            // Where occurrences went when symbolication gave them another signature.
            struct Moves: Encodable { var movedTo: [GroupMove] }
            let moves = try await store.moves(fromGroup: group.id, in: context.scope)
            return try JSONResponse.make(Merged(group, Moves(movedTo: moves)))
        }
        group.get("groups/:id/occurrences") { request, context in
            let id = try context.id()
            guard try await store.group(id: id, in: context.scope) != nil else { throw APIError.notFound("group") }
            let page = request.page
            let occurrences = try await store.occurrences(groupID: id, in: context.scope, page: page)
            return try JSONResponse.make(PageOf(occurrences, page: page, path: "/api/v1/groups/\(id)/occurrences"))
        }
        group.get("reports/:id") { _, context in
            guard let stored = try await store.report(id: try context.id(), in: context.scope) else {
                throw APIError.notFound("report")
            }
            return Response(
                status: .ok, headers: [.contentType: "application/json; charset=utf-8"],
                body: .init(byteBuffer: ByteBuffer(bytes: try CrashReport.makeEncoder().encode(stored.report))))
        }
        // Where the report is in symbolication on the collector (`failed` says why).
        group.get("reports/:id/symbolication") { _, context in
            guard let stored = try await store.report(id: try context.id(), in: context.scope) else {
                throw APIError.notFound("report")
            }
            guard let symbolication = stored.symbolication else {
                throw APIError.notFound("symbolication of the report")
            }
            return try JSONResponse.make(symbolication)
        }
        group.get("bundles") { request, context in
            let page = request.page
            let bundles = try await store.bundles(in: context.scope, page: page)
            return try JSONResponse.make(PageOf(bundles, page: page, path: "/api/v1/bundles"))
        }
        group.get("bundles/:id") { _, context in
            guard let bundle = try await store.bundle(id: try context.id(), in: context.scope) else {
                throw APIError.notFound("bundle")
            }
            return try JSONResponse.make(bundle)
        }
        group.get("bundles/:id/files") { _, context in
            let id = try context.id()
            guard try await store.bundle(id: id, in: context.scope) != nil else { throw APIError.notFound("bundle") }
            return try JSONResponse.make(try await store.files(bundleID: id, in: context.scope))
        }
        group.get("files/:id/content") { _, context in
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
        // What one failing request's trace left: its reports (crashes and captured errors, in whichever
        // group) and the log lines that carry the trace id.
        group.get("traces/:traceID") { request, context in
            guard let traceID = context.parameters.get("traceID").flatMap(TraceID.checked) else {
                throw APIError.invalidTraceID()
            }
            struct Trace: Encodable {
                var traceID: String
                var reports: [TracedReport]
                var logLines: [LogHit]
            }
            let reports = try await store.reports(traceID: traceID, in: context.scope, page: Page(limit: 100))
            let lines = try await store.searchLogs(in: context.scope, query: traceID, page: Page(limit: 100))
            return try JSONResponse.make(Trace(traceID: traceID, reports: reports, logLines: lines))
        }
        group.get("logs/search") { request, context in
            let query: String
            switch SearchQuery.normalized(request.queryDictionary["q"] ?? "") {
            case .success(let words): query = words
            case .failure(.empty): throw APIError.missingQuery()
            case .failure(.tooLong): throw APIError.queryTooLong(limit: SearchQuery.maxBytes)
            }
            let page = request.page
            let hits = try await store.searchLogs(in: context.scope, query: query, page: page)
            let encoded = query.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
            return try JSONResponse.make(
                PageOf(hits, page: page, path: "/api/v1/logs/search", extraQuery: "q=\(encoded)&"))
        }
    }
}
