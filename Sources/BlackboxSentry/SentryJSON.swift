import Foundation

/// Any JSON value, as Sentry SDKs send them: the protocol lets most fields take several shapes (a
/// list or `{"values": [...]}`, a number or an RFC 3339 string, a string or an object), and SDKs add
/// fields freely, so an SDK's JSON is read as a tree (`parse`, SentryJSON+Parsing.swift) and the
/// typed models are read from it leniently (`SentryEvent(lenient:)`): a field of an unexpected shape
/// is left out, never an error. What stays a tree in the typed models is what the protocol leaves
/// free-form (contexts, extra, breadcrumb data).
public enum SentryJSON: Codable, Sendable, Equatable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([SentryJSON])
    case object([String: SentryJSON])

    /// Codable has no way to ask a value's type, only to try one: every wrong try throws (which is why
    /// `parse` does not decode through here). The types are tried in the order values are most common
    /// in events: strings, objects, lists, numbers, booleans.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let object = try? decoder.container(keyedBy: MemberName.self) {
            // `allKeys` builds a new array on every call.
            let keys = object.allKeys
            var members: [String: SentryJSON] = [:]
            members.reserveCapacity(keys.count)
            for key in keys { members[key.stringValue] = try object.decode(SentryJSON.self, forKey: key) }
            self = .object(members)
        } else if var list = try? decoder.unkeyedContainer() {
            var values: [SentryJSON] = []
            if let count = list.count { values.reserveCapacity(count) }
            while !list.isAtEnd { values.append(try list.decode(SentryJSON.self)) }
            self = .array(values)
        } else if let value = try? container.decode(Double.self) {
            self = .number(value)
        } else {
            self = .bool(try container.decode(Bool.self))
        }
    }

    /// A whole number is written as an integer (`12`, not `12.0`), as SDKs write counts and ids.
    public func encode(to encoder: any Encoder) throws {
        switch self {
        case .null:
            var container = encoder.singleValueContainer()
            try container.encodeNil()
        case .bool(let value):
            var container = encoder.singleValueContainer()
            try container.encode(value)
        case .number(let value):
            var container = encoder.singleValueContainer()
            if value == value.rounded(), abs(value) < 9e15 {
                try container.encode(Int64(value))
            } else {
                try container.encode(value)
            }
        case .string(let value):
            var container = encoder.singleValueContainer()
            try container.encode(value)
        case .array(let values):
            var container = encoder.unkeyedContainer()
            for value in values { try container.encode(value) }
        case .object(let members):
            var container = encoder.container(keyedBy: MemberName.self)
            for (name, value) in members { try container.encode(value, forKey: MemberName(stringValue: name)) }
        }
    }

    /// An object's member name, whatever it is.
    private struct MemberName: CodingKey {
        let stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    public subscript(key: String) -> SentryJSON? {
        if case .object(let object) = self { object[key] } else { nil }
    }

    public var string: String? { if case .string(let value) = self { value } else { nil } }
    public var number: Double? { if case .number(let value) = self { value } else { nil } }
    public var bool: Bool? { if case .bool(let value) = self { value } else { nil } }
    public var object: [String: SentryJSON]? { if case .object(let value) = self { value } else { nil } }

    /// A list, also when the protocol wraps it as `{"values": [...]}` (exceptions, threads,
    /// breadcrumbs).
    public var values: [SentryJSON]? {
        switch self {
        case .array(let values): values
        case .object(let object): object["values"]?.values
        default: nil
        }
    }

    /// An integer from a number or a decimal string (ids, line numbers), within Int64.
    public var integer: Int64? {
        switch self {
        case .number(let value) where value.isFinite && abs(value) < 9e15: Int64(value)
        case .string(let text): Int64(text)
        default: nil
        }
    }

    /// A scalar as text (tags, contexts); objects and lists as compact JSON-like text.
    public var text: String {
        switch self {
        case .null: "null"
        case .bool(let value): value ? "true" : "false"
        case .number(let value):
            value.isFinite && value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(value)
        case .string(let value): value
        case .array(let values): "[" + values.map(\.text).joined(separator: ", ") + "]"
        case .object(let object):
            "{" + object.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value.text)" }.joined(separator: ", ") + "}"
        }
    }

    /// A point in time from seconds since 1970 or an RFC 3339 string.
    public var date: Date? {
        switch self {
        case .number(let seconds) where seconds.isFinite && seconds > 0 && seconds < 1e11:
            Date(timeIntervalSince1970: seconds)
        case .string(let text):
            (try? Date(text, strategy: .iso8601))
                ?? (try? Date(text, strategy: Date.ISO8601FormatStyle(includingFractionalSeconds: true)))
                ?? (try? Date(text + "Z", strategy: Date.ISO8601FormatStyle(includingFractionalSeconds: true)))
                ?? (try? Date(text + "Z", strategy: .iso8601))
        default: nil
        }
    }

    /// `date` as seconds since 1970; a number is taken as it is (through a `Date` it could come
    /// back a rounding away).
    public var secondsSince1970: Double? {
        if case .number(let seconds) = self { date != nil ? seconds : nil } else { date?.timeIntervalSince1970 }
    }
}
