#if Upload
    import Foundation

    /// Where bundles go: a collector's base URL (http or https) and a project's ingest key.
    public struct CollectorEndpoint: Sendable, Equatable {
        public var baseURL: URL
        public var key: String

        /// `baseURL` must be an absolute http(s) URL, e.g. `https://collector.example.com`.
        public init(baseURL: URL, key: String) throws(EndpointProblem) {
            guard let scheme = baseURL.scheme?.lowercased(), scheme == "http" || scheme == "https",
                baseURL.host != nil
            else {
                throw EndpointProblem(
                    description:
                        "the collector URL must start with http:// or https://, got \"\(baseURL.absoluteString)\"")
            }
            guard !key.isEmpty, !key.contains(where: { $0.isWhitespace || $0.isNewline }) else {
                throw EndpointProblem(description: "the ingest key is empty or contains whitespace")
            }
            self.baseURL = baseURL
            self.key = key
        }

        public init(url: String, key: String) throws(EndpointProblem) {
            guard let parsed = URL(string: url) else {
                throw EndpointProblem(description: "not a URL: \"\(url)\"")
            }
            try self.init(baseURL: parsed, key: key)
        }

        func url(_ path: String) -> String {
            var base = baseURL.absoluteString
            while base.hasSuffix("/") { base.removeLast() }
            return base + path
        }
    }

    public struct EndpointProblem: Error, Sendable, CustomStringConvertible {
        public var description: String
    }
#endif
