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
        if text.prefix("sentry ".count).lowercased() == "sentry " { text = text.dropFirst("sentry ".count) }
        var fields: [String: String] = [:]
        for part in text.split(separator: ",") {
            let pair = part.split(separator: "=", maxSplits: 1)
            guard pair.count == 2 else { continue }
            fields[trimmed(pair[0])] = trimmed(pair[1])
        }
        return fields
    }

    /// Without the spaces and tabs around it (HTTP's optional white space). Not Foundation's
    /// `trimmingCharacters(in:)`, which bridges through NSString: 1.7 % of the collector's CPU while
    /// it stored Sentry events, for every request's header (perf, 2026-12-05).
    private static func trimmed(_ text: Substring) -> String {
        let isSpace = { (character: Character) in character == " " || character == "\t" }
        var text = text.drop(while: isSpace)
        while let last = text.last, isSpace(last) { text = text.dropLast() }
        return String(text)
    }

    /// The DSN a Sentry SDK is configured with for a project's ingest key.
    public static func dsn(publicURL: String, ingestKey: String, projectID: Int64) -> String {
        SentryDSN(serverURL: publicURL, publicKey: ingestKey, projectID: projectID)?.description
            ?? "\(publicURL)/\(projectID)"
    }
}
