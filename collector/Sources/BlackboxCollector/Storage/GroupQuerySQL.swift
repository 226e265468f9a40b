import Foundation

/// A `GroupQuery` as one SQL statement both stores run (`?` placeholders; PostgreSQL numbers them),
/// so the filters and orders cannot mean different things in the two stores.
struct GroupQuerySQL {
    enum Argument {
        case integer(Int64)
        case text(String)
        case real(Double)
    }

    var sql: String
    var arguments: [Argument]

    init(_ query: GroupQuery, projectID: Int64, page: Page) {
        var conditions = [
            "project_id = ?",
            // A group all of whose occurrences moved elsewhere (regrouped by symbolication) is not listed.
            "(count > 0 OR NOT EXISTS (SELECT 1 FROM group_moves WHERE from_group_id = crash_groups.id))",
        ]
        var arguments: [Argument] = [.integer(projectID)]
        if let state = query.state {
            conditions.append("state = ?")
            arguments.append(.text(state.rawValue))
        }
        if let kind = query.kind {
            conditions.append("kind = ?")
            arguments.append(.text(kind))
        }
        if let version = query.version {
            conditions.append(
                "EXISTS (SELECT 1 FROM group_versions WHERE group_id = crash_groups.id AND app_version = ? AND count > 0)"
            )
            arguments.append(.text(version))
        }
        if let host = query.host {
            conditions.append(
                "EXISTS (SELECT 1 FROM group_hosts WHERE group_id = crash_groups.id AND host = ? AND count > 0)")
            arguments.append(.text(host))
        }
        if let text = query.text {
            conditions.append(
                "(lower(title) LIKE lower(?) ESCAPE '\\' OR lower(signature_text) LIKE lower(?) ESCAPE '\\')")
            let pattern = GroupQuery.likePattern(text)
            arguments += [.text(pattern), .text(pattern)]
        }
        var select = "SELECT crash_groups.*"
        var selectArguments: [Argument] = []
        let order: String
        switch query.order {
        case .lastSeen:
            order = "last_seen DESC, id DESC"
        case .count:
            if let version = query.version {
                select +=
                    ", (SELECT count FROM group_versions WHERE group_id = crash_groups.id AND app_version = ?) AS ranked"
                selectArguments.append(.text(version))
                order = "ranked DESC, id DESC"
            } else {
                order = "count DESC, id DESC"
            }
        case .trend:
            let day = query.now.timeIntervalSince1970 - 86_400
            select += """
                , (SELECT count(*) FROM reports WHERE group_id = crash_groups.id AND occurred_at >= ?)
                  - (SELECT count(*) FROM reports WHERE group_id = crash_groups.id AND occurred_at >= ? AND occurred_at < ?)
                  AS ranked
                """
            selectArguments += [.real(day), .real(day - 86_400), .real(day)]
            order = "ranked DESC, last_seen DESC, id DESC"
        }
        sql = """
            \(select) FROM crash_groups WHERE \(conditions.joined(separator: " AND "))
            ORDER BY \(order) LIMIT ? OFFSET ?
            """
        self.arguments = selectArguments + arguments + [.integer(Int64(page.limit)), .integer(Int64(page.offset))]
    }

    /// The statement with `$1`, `$2`, … (PostgreSQL's placeholders).
    var numberedSQL: String { Self.numbered(sql) }

    /// `sql` with each `?` outside a string literal replaced by `$1`, `$2`, …
    static func numbered(_ sql: String) -> String {
        var result = ""
        var number = 0
        var inString = false
        for character in sql {
            if character == "'" { inString.toggle() }
            if character == "?" && !inString {
                number += 1
                result += "$\(number)"
            } else {
                result.append(character)
            }
        }
        return result
    }
}
