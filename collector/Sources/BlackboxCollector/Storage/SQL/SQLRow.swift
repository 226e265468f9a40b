/// One result row, as both drivers hand it over (sql-kit's `SQLRow` habit): the mapping from rows to
/// records is written once, above the drivers. Columns keep their order; rows are narrow, so a
/// lookup is a short scan.
struct SQLRow: Sendable {
    let columns: [String]
    let values: [SQLValue]

    init(columns: [String], values: [SQLValue]) {
        precondition(columns.count == values.count, "a row has one value per column")
        self.columns = columns
        self.values = values
    }

    var firstColumn: String? { columns.first }

    /// The column's value; a missing column or a value of another type throws (a schema bug, never
    /// silently a default).
    func decode<T: SQLValueConvertible>(_ column: String, as type: T.Type = T.self) throws(SQLDecodingError) -> T {
        guard let index = columns.firstIndex(of: column) else {
            throw SQLDecodingError(column: column, expected: "\(T.self)", found: .null)
        }
        do {
            return try T(sqlValue: values[index])
        } catch {
            throw SQLDecodingError(column: column, expected: error.expected, found: error.found)
        }
    }
}
