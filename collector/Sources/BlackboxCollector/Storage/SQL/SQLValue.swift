import Foundation

/// A value bound to a statement or read from a row: the few types the schema uses. Both drivers
/// translate to and from it, so the statements and row decoding above them are written once.
enum SQLValue: Sendable, Hashable {
    case null
    case integer(Int64)
    case real(Double)
    case text(String)
    case bool(Bool)
    case blob(Data)
}

/// A Swift type stored in one column. Decoding is lenient where the two databases differ in
/// storage, not in meaning: SQLite keeps a boolean as 0/1, and a REAL column may hand back an integer.
protocol SQLValueConvertible: Sendable {
    var sqlValue: SQLValue { get }
    init(sqlValue: SQLValue) throws(SQLDecodingError)
}

struct SQLDecodingError: Error, CustomStringConvertible {
    var column: String
    var expected: String
    var found: SQLValue

    var description: String { "column \(column): expected \(expected), found \(found)" }
}

extension SQLValueConvertible {
    fileprivate static func mismatch(_ value: SQLValue) -> SQLDecodingError {
        SQLDecodingError(column: "?", expected: "\(Self.self)", found: value)
    }
}

extension Int64: SQLValueConvertible {
    var sqlValue: SQLValue { .integer(self) }
    init(sqlValue: SQLValue) throws(SQLDecodingError) {
        switch sqlValue {
        case .integer(let value): self = value
        case .bool(let value): self = value ? 1 : 0
        case .real(let value) where value.rounded() == value && abs(value) < 9e18: self = Int64(value)
        default: throw Self.mismatch(sqlValue)
        }
    }
}

extension Int: SQLValueConvertible {
    var sqlValue: SQLValue { .integer(Int64(self)) }
    init(sqlValue: SQLValue) throws(SQLDecodingError) { self = Int(try Int64(sqlValue: sqlValue)) }
}

extension Double: SQLValueConvertible {
    var sqlValue: SQLValue { .real(self) }
    init(sqlValue: SQLValue) throws(SQLDecodingError) {
        switch sqlValue {
        case .real(let value): self = value
        case .integer(let value): self = Double(value)
        default: throw Self.mismatch(sqlValue)
        }
    }
}

extension String: SQLValueConvertible {
    var sqlValue: SQLValue { .text(self) }
    init(sqlValue: SQLValue) throws(SQLDecodingError) {
        guard case .text(let value) = sqlValue else { throw Self.mismatch(sqlValue) }
        self = value
    }
}

extension Bool: SQLValueConvertible {
    var sqlValue: SQLValue { .bool(self) }
    init(sqlValue: SQLValue) throws(SQLDecodingError) {
        switch sqlValue {
        case .bool(let value): self = value
        case .integer(let value): self = value != 0
        default: throw Self.mismatch(sqlValue)
        }
    }
}

extension Data: SQLValueConvertible {
    var sqlValue: SQLValue { .blob(self) }
    init(sqlValue: SQLValue) throws(SQLDecodingError) {
        switch sqlValue {
        case .blob(let value): self = value
        case .text(let value): self = Data(value.utf8)
        default: throw Self.mismatch(sqlValue)
        }
    }
}

/// Seconds since 1970 in a DOUBLE column, as the whole schema keeps time.
extension Date: SQLValueConvertible {
    var sqlValue: SQLValue { .real(timeIntervalSince1970) }
    init(sqlValue: SQLValue) throws(SQLDecodingError) {
        self.init(timeIntervalSince1970: try Double(sqlValue: sqlValue))
    }
}

extension Optional: SQLValueConvertible where Wrapped: SQLValueConvertible {
    var sqlValue: SQLValue { self?.sqlValue ?? .null }
    init(sqlValue: SQLValue) throws(SQLDecodingError) {
        self = sqlValue == .null ? nil : try Wrapped(sqlValue: sqlValue)
    }
}

/// Enumerations stored by their raw value.
extension SQLValueConvertible where Self: RawRepresentable, RawValue == String {
    var sqlValue: SQLValue { .text(rawValue) }
    init(sqlValue: SQLValue) throws(SQLDecodingError) {
        guard let value = Self(rawValue: try String(sqlValue: sqlValue)) else { throw Self.mismatch(sqlValue) }
        self = value
    }
}
