import BlackboxFormat
import Foundation

/// Which groups a list shows, and in what order: the groups page's filters and sort, and the API's
/// query parameters (`state`, `kind`, `version`, `host`, `trace`, `diagnosis`, `q`, `sort`).
public struct GroupQuery: Sendable, Equatable {
    public enum Order: String, Sendable, CaseIterable {
        /// Most recently seen first (the default).
        case lastSeen = "last-seen"
        /// Most occurrences first; with a `version`, most occurrences in that version (top crashers).
        case count
        /// Growing fastest first: occurrences in the last 24 hours minus those in the 24 before.
        case trend
    }

    public var order: Order = .lastSeen
    public var state: GroupStatus.State?
    public var kind: String?
    public var version: String?
    public var host: String?
    /// Groups with an occurrence in this trace (a report whose scope had the trace id).
    public var traceID: String?
    /// Groups with an occurrence diagnosed so (`CrashDiagnosis.Kind`: `stack-overflow`, `nil-unwrap`…).
    public var diagnosis: CrashDiagnosis.Kind?
    /// Words in the title or the frames of the signature (substring, case-insensitive for ASCII).
    public var text: String?
    /// The moment `trend` counts back from.
    public var now = Date()

    public init() {}

    static let maxValueLength = 200

    /// From query parameters; an unknown value is a 400 with the reason, an empty one counts as absent.
    init(parameters: [String: String], now: Date = Date()) throws(APIError) {
        self.now = now
        func value(_ name: String) throws(APIError) -> String? {
            guard let raw = parameters[name]?.trimmingCharacters(in: .whitespaces), !raw.isEmpty else { return nil }
            guard raw.utf8.count <= Self.maxValueLength else {
                throw .invalidQuery("\(name) is longer than \(Self.maxValueLength) bytes")
            }
            return raw
        }
        if let sort = try value("sort") {
            guard let order = Order(rawValue: sort) else {
                throw .invalidQuery("sort must be last-seen, count or trend")
            }
            self.order = order
        }
        if let state = try value("state") {
            guard let parsed = GroupStatus.State(rawValue: state) else {
                throw .invalidQuery("state must be open, resolved, ignored or regressed")
            }
            self.state = parsed
        }
        kind = try value("kind")
        version = try value("version")
        host = try value("host")
        if let trace = try value("trace") {
            guard let checked = TraceID.checked(trace) else {
                throw .invalidQuery("trace must be letters, digits, '-', '_', '.' or ':'")
            }
            traceID = checked
        }
        if let diagnosis = try value("diagnosis") {
            guard let kind = CrashDiagnosis.Kind(rawValue: diagnosis) else {
                throw .invalidQuery(
                    "diagnosis must be one of \(CrashDiagnosis.Kind.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            self.diagnosis = kind
        }
        text = try value("q")
    }

    /// The query as URL parameters (for links to the next page and to other sorts).
    var parameters: [(String, String)] {
        var parameters: [(String, String)] = []
        if order != .lastSeen { parameters.append(("sort", order.rawValue)) }
        if let state { parameters.append(("state", state.rawValue)) }
        if let kind { parameters.append(("kind", kind)) }
        if let version { parameters.append(("version", version)) }
        if let host { parameters.append(("host", host)) }
        if let traceID { parameters.append(("trace", traceID)) }
        if let diagnosis { parameters.append(("diagnosis", diagnosis.rawValue)) }
        if let text { parameters.append(("q", text)) }
        return parameters
    }

    /// `a=b&c=d&` (each value percent-encoded), ready to prefix `limit=`/`offset=`.
    var queryString: String {
        parameters.map { "\($0.0)=\($0.1.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")&" }
            .joined()
    }

    /// A `LIKE` pattern matching `text` anywhere, with `%`, `_` and `\` taken literally.
    static func likePattern(_ text: String) -> String {
        "%"
            + text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "%", with: "\\%")
            .replacingOccurrences(of: "_", with: "\\_") + "%"
    }
}

extension APIError {
    static func invalidQuery(_ detail: String) -> Self { .init(status: 400, code: "invalid_query", message: detail) }
}
