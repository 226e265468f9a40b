import BlackboxSentry
import Foundation
import Hummingbird

/// Where a Sentry SDK puts its public key (the project's ingest key): `X-Sentry-Auth: Sentry
/// sentry_key=…, sentry_version=7, …`, a `sentry_key` query parameter (browsers), or the envelope
/// header's `dsn` (`SentryEnvelope.Header.dsn`, read once the body is in).
public enum SentryAuthentication {
    static func key(_ request: Request) -> String? {
        if let header = request.headers[.init("X-Sentry-Auth")!] ?? request.headers[.authorization],
            let key = fields(header)["sentry_key"], !key.isEmpty
        {
            return key
        }
        if let key = request.uri.queryParameters.get("sentry_key"), !key.isEmpty { return key }
        return nil
    }

    /// `Sentry sentry_key=abc, sentry_version=7` → ["sentry_key": "abc", "sentry_version": "7"].
    static func fields(_ header: String) -> [String: String] {
        var text = Substring(header.prefix(1_024)).drop { $0 == " " }
        if text.lowercased().hasPrefix("sentry ") { text = text.dropFirst("sentry ".count) }
        var fields: [String: String] = [:]
        for part in text.split(separator: ",") {
            let pair = part.split(separator: "=", maxSplits: 1)
            guard pair.count == 2 else { continue }
            fields[pair[0].trimmingCharacters(in: .whitespaces)] = pair[1].trimmingCharacters(in: .whitespaces)
        }
        return fields
    }

    /// The DSN a Sentry SDK is configured with for a project's ingest key.
    public static func dsn(publicURL: String, ingestKey: String, projectID: Int64) -> String {
        SentryDSN(serverURL: publicURL, publicKey: ingestKey, projectID: projectID)?.description
            ?? "\(publicURL)/\(projectID)"
    }
}
