import BlackboxFormat

/// The names an occurrence is counted under in a group's version and host tallies, and a run in
/// release health: one rule for ingest, symbolication, regrouping and sessions, so that a version's
/// crashes and its runs meet under the same name (a report without a version and a session without
/// one are both "unknown", not "" and "unknown").
enum TallyKey {
    static let unknown = "unknown"
    /// A session summary's version is cut to this many characters before it is counted.
    static let maxSessionVersionLength = 200

    static func version(_ version: String?) -> String { named(version) }
    static func host(_ name: String) -> String { named(name) }

    private static func named(_ value: String?) -> String {
        guard let value, !value.isEmpty else { return unknown }
        return value
    }
}

extension CrashReport {
    var versionKey: String { TallyKey.version(app.version) }
    var hostKey: String { TallyKey.host(host.name) }
}
