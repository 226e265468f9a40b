import Foundation
import Hummingbird

/// `/api/v1`: groups, one group with where its occurrences moved, its trend and its occurrences.
enum GroupsAPI {
    static func routes(store: ReadAPI.Store) -> RouteCollection<AuthenticatedContext> {
        let routes = RouteCollection(context: AuthenticatedContext.self)
        routes.get("groups") { request, context in
            let page = request.page
            let query = try GroupQuery(parameters: request.queryDictionary)
            let groups = try await store.groups(in: context.scope, query: query, page: page)
            return try JSONResponse.make(
                PageOf(groups, page: page, path: "/api/v1/groups", extraQuery: query.queryString))
        }
        routes.get("groups/:id") { request, context in
            guard let group = try await store.group(id: try context.id(), in: context.scope) else {
                throw APIError.notFound("group")
            }
            // Where occurrences went when symbolication gave them another signature.
            struct Moves: Encodable { var movedTo: [GroupMove] }
            let moves = try await store.moves(fromGroup: group.id, in: context.scope)
            return try JSONResponse.make(Merged(group, Moves(movedTo: moves)))
        }
        routes.get("groups/:id/trend") { _, context in
            let id = try context.id()
            guard try await store.group(id: id, in: context.scope) != nil else { throw APIError.notFound("group") }
            struct Series: Encodable {
                var since: Date
                var bucketSeconds: Int
                var counts: [Int]
            }
            struct Trend: Encodable {
                var hours: Series
                var days: Series
            }
            let trend = try await GroupTrend(groupID: id, store: store, in: context.scope)
            return try JSONResponse.make(
                Trend(
                    hours: Series(since: trend.hours.since, bucketSeconds: 3600, counts: trend.byHour),
                    days: Series(since: trend.days.since, bucketSeconds: 86_400, counts: trend.byDay)))
        }
        routes.get("groups/:id/occurrences") { request, context in
            let id = try context.id()
            guard try await store.group(id: id, in: context.scope) != nil else { throw APIError.notFound("group") }
            let page = request.page
            let occurrences = try await store.occurrences(groupID: id, in: context.scope, page: page)
            return try JSONResponse.make(PageOf(occurrences, page: page, path: "/api/v1/groups/\(id)/occurrences"))
        }
        return routes
    }
}
