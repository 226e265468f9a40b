#if Upload
    import Foundation

    /// A Sentry DSN, `{scheme}://{public key}[:{secret}]@{host}[:{port}][/{path}]/{project id}`: where
    /// a Sentry-compatible server (Sentry, GlitchTip, Bugsink, Blackbox's own collector) takes
    /// envelopes, and the key that authenticates them.
    public struct SentryDSN: Sendable, Equatable, CustomStringConvertible {
        public var scheme: String
        public var publicKey: String
        public var host: String
        public var port: Int?
        /// The path before the project id, without a trailing slash (`""` for most servers).
        public var path: String
        public var projectID: String

        public init(_ text: String) throws(EndpointProblem) {
            let trimmed = text.trimmingCharacters(in: .whitespaces)
            guard let components = URLComponents(string: trimmed), let scheme = components.scheme?.lowercased(),
                scheme == "http" || scheme == "https"
            else {
                throw EndpointProblem(description: "a Sentry DSN starts with http:// or https://, got \"\(text)\"")
            }
            // The key goes into a header: letters, digits, `_` and `-` only.
            guard let key = components.user, !key.isEmpty,
                key.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_" || $0 == "-") })
            else {
                throw EndpointProblem(description: "the Sentry DSN has no public key before the @: \"\(text)\"")
            }
            guard let host = components.host, !host.isEmpty else {
                throw EndpointProblem(description: "the Sentry DSN has no host: \"\(text)\"")
            }
            var segments = components.path.split(separator: "/", omittingEmptySubsequences: true).map(String.init)
            guard let project = segments.popLast(), project.allSatisfy(\.isASCII), Int64(project) != nil else {
                throw EndpointProblem(description: "the Sentry DSN does not end with a project id: \"\(text)\"")
            }
            self.scheme = scheme
            self.publicKey = key
            self.host = host
            self.port = components.port
            self.path = segments.isEmpty ? "" : "/" + segments.joined(separator: "/")
            self.projectID = project
        }

        /// `SENTRY_DSN`, when set and not empty.
        public static func fromEnvironment(_ environment: [String: String] = ProcessInfo.processInfo.environment)
            throws(EndpointProblem) -> SentryDSN?
        {
            guard let text = environment["SENTRY_DSN"], !text.isEmpty else { return nil }
            return try SentryDSN(text)
        }

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
        func authorization(client: String) -> String {
            "Sentry sentry_version=7, sentry_key=\(publicKey), sentry_client=\(client)"
        }
    }
#endif
