import Foundation

/// A `GroupQuery` as one statement both stores run, so the filters and orders cannot mean
/// different things in the two stores.
enum GroupQueryStatement {
    static func select(_ query: GroupQuery, projectID: Int64, page: Page) -> SQLStatement {
        var conditions: [SQLStatement] = [
            "project_id = \(projectID)",
            // A group all of whose occurrences moved elsewhere (regrouped by symbolication) is not listed.
            "(count > 0 OR NOT EXISTS (SELECT 1 FROM group_moves WHERE from_group_id = crash_groups.id))",
        ]
        if let state = query.state { conditions.append("state = \(state.rawValue)") }
        if let kind = query.kind { conditions.append("kind = \(kind)") }
        if let version = query.version {
            conditions.append(
                """
                EXISTS (SELECT 1 FROM group_versions
                    WHERE group_id = crash_groups.id AND app_version = \(version) AND count > 0)
                """)
        }
        if let host = query.host {
            conditions.append(
                "EXISTS (SELECT 1 FROM group_hosts WHERE group_id = crash_groups.id AND host = \(host) AND count > 0)")
        }
        if let traceID = query.traceID {
            conditions.append(
                """
                EXISTS (SELECT 1 FROM reports
                    WHERE project_id = \(projectID) AND trace_id = \(traceID) AND group_id = crash_groups.id)
                """)
        }
        if let diagnosis = query.diagnosis {
            conditions.append(
                """
                EXISTS (SELECT 1 FROM reports
                    WHERE group_id = crash_groups.id AND diagnosis = \(diagnosis.rawValue))
                """)
        }
        if let text = query.text {
            let pattern = GroupQuery.likePattern(text)
            conditions.append(
                """
                (lower(title) LIKE lower(\(pattern)) ESCAPE '\\' OR lower(signature_text) LIKE lower(\(pattern)) ESCAPE '\\')
                """)
        }
        var select: SQLStatement = "SELECT crash_groups.*"
        let order: SQLStatement
        switch query.order {
        case .lastSeen:
            order = "last_seen DESC, id DESC"
        case .count:
            if let version = query.version {
                select =
                    select + """
                        , (SELECT count FROM group_versions WHERE group_id = crash_groups.id AND app_version = \(version))
                          AS ranked
                        """
                order = "ranked DESC, id DESC"
            } else {
                order = "count DESC, id DESC"
            }
        case .trend:
            let day = query.now.addingTimeInterval(-86_400)
            let dayBefore = day.addingTimeInterval(-86_400)
            select =
                select + """
                    , (SELECT count(*) FROM reports WHERE group_id = crash_groups.id AND occurred_at >= \(day))
                      - (SELECT count(*) FROM reports WHERE group_id = crash_groups.id AND occurred_at >= \(dayBefore)
                         AND occurred_at < \(day))
                      AS ranked
                    """
            order = "ranked DESC, last_seen DESC, id DESC"
        }
        return """
            \(select) FROM crash_groups WHERE \(conditions.joined(separator: " AND "))
            ORDER BY \(order) LIMIT \(page.limit) OFFSET \(page.offset)
            """
    }
}
