import CCrashHandler

/// What a task is doing — a request's route, method and id, the user, the trace — so that a crash,
/// an assertion report or a captured error names *this* request and no other. Bound to a task by
/// `Blackbox.withScope` (a framework integration does it per request) and inherited by its child tasks
/// for everything reported from ordinary code; see `Blackbox.withScope` for what a crash sees.
public struct DiagnosticScope: Sendable, Hashable {
    public var route: String?
    public var method: String?
    public var requestID: String?
    public var userID: String?
    /// Filled from the logging metadata provider's `trace_id` / `span_id` (swift-otel's) when not set.
    public var traceID: String?
    public var spanID: String?
    /// More fields: names of letters, digits, `.`, `_` and `-` (others are left out).
    public var tags: [String: String]

    public init(
        route: String? = nil, method: String? = nil, requestID: String? = nil, userID: String? = nil,
        traceID: String? = nil, spanID: String? = nil, tags: [String: String] = [:]
    ) {
        self.route = route
        self.method = method
        self.requestID = requestID
        self.userID = userID
        self.traceID = traceID
        self.spanID = spanID
        self.tags = tags
    }

    /// The fields as reports carry them (`route`, `method`, `request-id`, `user-id`, `trace-id`,
    /// `span-id` and the tags); the named fields win over tags of the same name.
    public var fields: [String: String] {
        var fields = tags
        for (name, value) in namedFields { fields[name] = value }
        return fields
    }

    private var namedFields: [(String, String)] {
        [
            ("route", route), ("method", method), ("request-id", requestID), ("user-id", userID),
            ("trace-id", traceID), ("span-id", spanID),
        ].compactMap { name, value in value.map { (name, $0) } }
    }

    /// This scope inside `outer`: this one's fields where set, the outer one's elsewhere.
    func within(_ outer: DiagnosticScope?) -> DiagnosticScope {
        guard let outer else { return self }
        return DiagnosticScope(
            route: route ?? outer.route, method: method ?? outer.method, requestID: requestID ?? outer.requestID,
            userID: userID ?? outer.userID, traceID: traceID ?? outer.traceID, spanID: spanID ?? outer.spanID,
            tags: outer.tags.merging(tags) { _, inner in inner })
    }

    /// The fields as every kind of report carries them (crash, hang, error, non-fatal): names of
    /// letters, digits, `.`, `_` and `-`, values cleaned and cut as annotations' are
    /// (`CrashAnnotations.cleanValue`), the named fields first, at most `BBX_SCOPE_FIELD_BYTES` in all
    /// (fields that do not fit are left out, never cut in half). A value is whatever the app put in
    /// the scope, a client's header or URL among them: unfiltered, it once put 111 KB, NULs and terminal
    /// escapes into error reports (security review 2026-11-27).
    var reportFields: [(name: String, value: String)] {
        var fields: [(name: String, value: String)] = []
        var bytes = 0
        let tagFields = tags.sorted { $0.key < $1.key }.filter { name, _ in !namedFields.contains { $0.0 == name } }
        for (name, value) in namedFields + tagFields where CrashAnnotations.isValidKey(name) {
            let clean = CrashAnnotations.cleanValue(value)
            let size = name.utf8.count + clean.utf8.count + 2
            guard bytes + size <= Self.maxReportBytes else { continue }
            bytes += size
            fields.append((name, clean))
        }
        return fields
    }

    static let maxReportBytes = Int(BBX_SCOPE_FIELD_BYTES)

    /// `reportFields` as a report's `scope`.
    var reportScope: [String: String] {
        Dictionary(reportFields.map { ($0.name, $0.value) }, uniquingKeysWith: { first, _ in first })
    }

    /// `name\0value\0` pairs for the crash handler (`ScopeBinding`): `reportFields`, cut to `limit`
    /// bytes.
    func crashViewBytes(limit: Int) -> [UInt8] {
        var bytes: [UInt8] = []
        for (name, value) in reportFields {
            let pair = Array(name.utf8) + [0] + Array(value.utf8) + [0]
            guard bytes.count + pair.count <= limit else { continue }
            bytes += pair
        }
        return bytes
    }
}
