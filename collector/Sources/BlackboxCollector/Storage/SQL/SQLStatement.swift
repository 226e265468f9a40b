/// One statement, written once for both stores: SQL text with values bound where they are
/// interpolated (`"… WHERE id = \(groupID)"`, as GRDB's `literal:` and `PostgresQuery` both write
/// it) and dialect tokens where the databases differ. `rendered(for:)` makes the text a driver runs.
struct SQLStatement: Sendable, ExpressibleByStringInterpolation {
    enum Part: Sendable {
        case sql(String)
        case value(SQLValue)
        case token(SQLDialect.Token)
    }

    private(set) var parts: [Part] = []

    init(stringLiteral value: String) { parts = [.sql(value)] }

    init(stringInterpolation: Interpolation) { parts = stringInterpolation.parts }

    struct Interpolation: StringInterpolationProtocol {
        var parts: [Part] = []

        init(literalCapacity: Int, interpolationCount: Int) { parts.reserveCapacity(interpolationCount * 2 + 1) }

        mutating func appendLiteral(_ literal: String) { parts.append(.sql(literal)) }

        /// A bound value, never spliced into the text.
        mutating func appendInterpolation(_ value: some SQLValueConvertible) { parts.append(.value(value.sqlValue)) }

        /// NULL when absent (its own overload, as `PostgresQuery` has, so an optional is bound, not
        /// described).
        mutating func appendInterpolation<Value: SQLValueConvertible>(_ value: Value?) {
            parts.append(.value(value?.sqlValue ?? .null))
        }

        /// A comma-separated list of bound values for `IN (…)`; an empty list is `NULL`, which
        /// matches nothing.
        mutating func appendInterpolation(list values: [some SQLValueConvertible]) {
            guard !values.isEmpty else { return parts.append(.sql("NULL")) }
            for (index, value) in values.enumerated() {
                if index > 0 { parts.append(.sql(", ")) }
                parts.append(.value(value.sqlValue))
            }
        }

        mutating func appendInterpolation(_ token: SQLDialect.Token) { parts.append(.token(token)) }

        /// Another statement's parts (a shared fragment, a built condition).
        mutating func appendInterpolation(_ statement: SQLStatement) { parts += statement.parts }

        /// Text written by the program, never by a user: column lists, names from a fixed set.
        mutating func appendInterpolation(unsafeSQL text: String) { parts.append(.sql(text)) }
    }

    /// Appends `other` (building a statement from optional pieces).
    static func + (lhs: SQLStatement, rhs: SQLStatement) -> SQLStatement {
        var joined = lhs
        joined.parts += rhs.parts
        return joined
    }

    /// The text with the dialect's placeholders and tokens, and the values in placeholder order.
    func rendered(for dialect: SQLDialect) -> (sql: String, values: [SQLValue]) {
        var sql = ""
        var values: [SQLValue] = []
        for part in parts {
            switch part {
            case .sql(let text): sql += text
            case .token(let token): sql += dialect.sql(token)
            case .value(let value):
                values.append(value)
                sql += dialect.placeholder(values.count)
            }
        }
        return (sql, values)
    }
}

extension Sequence<SQLStatement> {
    /// The statements joined with `separator` (conditions with " AND ", lists with ", ").
    func joined(separator: String) -> SQLStatement {
        var result = SQLStatement(stringLiteral: "")
        for (index, statement) in enumerated() {
            result = index == 0 ? statement : result + SQLStatement(stringLiteral: separator) + statement
        }
        return result
    }
}
