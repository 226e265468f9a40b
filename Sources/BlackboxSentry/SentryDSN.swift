import Foundation

/// A Sentry DSN, `{scheme}://{public key}[:{secret}]@{host}[:{port}][/{path}]/{project id}`: where
/// a Sentry-compatible server (Sentry, GlitchTip, Bugsink, Blackbox's own collector) takes
/// envelopes, and the key that authenticates them. The one parser of both sides: an app's delivery
/// reads its `SENTRY_DSN` with it, the collector an envelope header's `dsn`.
public struct SentryDSN: Sendable, Equatable, CustomStringConvertible {
    public var scheme: String
    public var publicKey: String
    public var host: String
    public var port: Int?
    /// The path before the project id, without a trailing slash (`""` for most servers).
    public var path: String
    public var projectID: String

    /// Why a text is not a DSN.
    public struct Problem: Error, Sendable, Equatable, CustomStringConvertible {
        public var description: String
    }

    public init(_ text: String) throws(Problem) {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        guard let components = URLComponents(string: trimmed), let scheme = components.scheme?.lowercased(),
            scheme == "http" || scheme == "https"
        else {
            throw Problem(description: "a Sentry DSN starts with http:// or https://, got \"\(text)\"")
        }
        // The key goes into a header: letters, digits, `_` and `-` only.
        guard let key = components.user, Self.isKey(key) else {
            throw Problem(description: "the Sentry DSN has no public key before the @: \"\(text)\"")
        }
        guard let host = components.host, !host.isEmpty else {
            throw Problem(description: "the Sentry DSN has no host: \"\(text)\"")
        }
        var segments = components.path.split(separator: "/", omittingEmptySubsequences: true).map(String.init)
        guard let project = segments.popLast(), project.allSatisfy(\.isASCII), Int64(project) != nil else {
            throw Problem(description: "the Sentry DSN does not end with a project id: \"\(text)\"")
        }
        self.init(
            scheme: scheme, publicKey: key, host: Self.unbracketed(host), port: components.port,
            path: segments.isEmpty ? "" : "/" + segments.joined(separator: "/"), projectID: project)
    }

    public init(scheme: String, publicKey: String, host: String, port: Int?, path: String, projectID: String) {
        self.scheme = scheme
        self.publicKey = publicKey
        self.host = host
        self.port = port
        self.path = path
        self.projectID = projectID
    }

    /// The DSN of project `projectID` on the server at `serverURL` (`http://host:port[/path]`), for
    /// `publicKey`; nil when the URL has no host.
    public init?(serverURL: String, publicKey: String, projectID: Int64) {
        guard let components = URLComponents(string: serverURL), let scheme = components.scheme,
            let host = components.host, !host.isEmpty
        else { return nil }
        let path = components.path.hasSuffix("/") ? String(components.path.dropLast()) : components.path
        self.init(
            scheme: scheme.lowercased(), publicKey: publicKey, host: Self.unbracketed(host), port: components.port,
            path: path,
            projectID: String(projectID))
    }

    /// `SENTRY_DSN`, when set and not empty.
    public static func fromEnvironment(_ environment: [String: String] = ProcessInfo.processInfo.environment)
        throws(Problem) -> SentryDSN?
    {
        guard let text = environment["SENTRY_DSN"], !text.isEmpty else { return nil }
        return try SentryDSN(text)
    }

    /// The project id as a number (every Sentry-compatible server numbers its projects).
    public var numericProjectID: Int64? { Int64(projectID) }

    /// Where envelopes go: `{scheme}://{host}[:{port}]{path}/api/{project}/envelope/`.
    public var envelopeURL: String {
        "\(scheme)://\(hostAndPort)\(path)/api/\(projectID)/envelope/"
    }

    /// The DSN without a secret (a DSN's secret is deprecated and never sent).
    public var description: String {
        "\(scheme)://\(publicKey)@\(hostAndPort)\(path)/\(projectID)"
    }

    private var hostAndPort: String {
        let bracketed = host.contains(":") ? "[\(host)]" : host
        return port.map { "\(bracketed):\($0)" } ?? bracketed
    }

    /// The `X-Sentry-Auth` header of every request.
    public func authorization(client: String) -> String {
        "Sentry sentry_version=7, sentry_key=\(publicKey), sentry_client=\(client)"
    }

    /// An IPv6 address without the brackets a URL puts around it (`description` adds them back).
    private static func unbracketed(_ host: String) -> String {
        host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
    }

    static func isKey(_ text: String) -> Bool {
        !text.isEmpty && text.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_" || $0 == "-") }
    }
}
