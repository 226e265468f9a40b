#if Upload
    import AsyncHTTPClient
    import BlackboxSystem
    import Foundation
    import NIOCore
    import NIOHTTP1
    import NIOPosix

    /// Talks to a collector over HTTP(S) with AsyncHTTPClient.
    ///
    /// AsyncHTTPClient rather than FoundationNetworking: it streams a request body from an async
    /// sequence (bundles are never held in memory), has per-request deadlines, does TLS itself with
    /// the system's trust roots, and needs no libcurl at run time. It pulls in SwiftNIO, which is why
    /// upload is a product of its own and `Blackbox` stays light.
    public struct CollectorClient: Sendable {
        public var endpoint: CollectorEndpoint
        /// How long one upload may take, connection included. Default 5 minutes.
        public var requestTimeout: Duration = .seconds(300)
        /// Bytes per second for request bodies, or nil for no limit. Default none.
        public var rateLimit: Int?
        let http: HTTPClient

        public init(endpoint: CollectorEndpoint, http: HTTPClient = CollectorClient.sharedHTTPClient) {
            self.endpoint = endpoint
            self.http = http
        }

        /// One client for the process (it is never shut down, like `HTTPClient.shared`), configured for
        /// the retry contract: a failed connection fails the request at once, because the uploader's own
        /// backoff decides when to try again (AsyncHTTPClient would otherwise keep reconnecting until
        /// the request's deadline).
        public static let sharedHTTPClient: HTTPClient = {
            var configuration = HTTPClient.Configuration()
            configuration.connectionPool.retryConnectionEstablishment = false
            configuration.timeout = .init(connect: .seconds(10), read: .seconds(60))
            // A redirect is answered, never followed: the body would be posted again wherever the server
            // points (https to http included, with the Sentry key, which AsyncHTTPClient keeps across
            // origins); a collector or DSN that moved is configured anew.
            configuration.redirectConfiguration = .disallow
            return HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
        }()

        /// Sends one bundle file. Never throws: every failure is an outcome the retry contract sorts.
        public func upload(
            file path: String, uploadID: UUID,
            progress: @escaping @Sendable (_ sent: Int64, _ total: Int64) -> Void = { _, _ in }
        ) async -> UploadOutcome {
            await send(
                file: path, to: "/api/v1/bundles", method: .POST,
                headers: [("Upload-Id", uploadID.uuidString.lowercased()), ("Content-Type", "application/zip")],
                progress: progress)
        }

        /// Streams a file as the body of an authenticated request and sorts the answer by the retry
        /// contract (bundles and symbol files alike).
        func send(
            file path: String, to urlPath: String, method: HTTPMethod, headers: [(String, String)],
            progress: @escaping @Sendable (_ sent: Int64, _ total: Int64) -> Void
        ) async -> UploadOutcome {
            let size: Int64
            do {
                size = try Self.fileSize(path)
            } catch {
                return .retryLater(reason: "\(error)")
            }
            var request = HTTPClientRequest(url: endpoint.url(urlPath))
            request.method = method
            request.headers.add(name: "Authorization", value: "Bearer \(endpoint.key)")
            for (name, value) in headers { request.headers.add(name: name, value: value) }
            let chunks = FileChunks(path: path, rateLimit: rateLimit, progress: { progress($0, size) })
            request.body = .stream(chunks, length: .known(size))
            do {
                let response = try await http.execute(request, timeout: requestTimeout.timeAmount)
                let body = try await response.body.collect(upTo: 1 << 20)
                return UploadOutcome.classify(status: Int(response.status.code), body: Array(buffer: body))
            } catch {
                return .retryLater(reason: Self.describe(error))
            }
        }

        /// `GET path` with the ingest key, for `blackbox doctor`: the status and the body as text.
        public func get(_ path: String, authenticated: Bool) async throws -> (status: Int, body: String) {
            var request = HTTPClientRequest(url: endpoint.url(path))
            if authenticated { request.headers.add(name: "Authorization", value: "Bearer \(endpoint.key)") }
            do {
                let response = try await http.execute(request, timeout: .seconds(10))
                let body = try await response.body.collect(upTo: 1 << 20)
                return (Int(response.status.code), String(buffer: body))
            } catch {
                throw ConnectionProblem(description: Self.describe(error))
            }
        }

        static func fileSize(_ path: String) throws -> Int64 {
            let attributes = try FileManager.default.attributesOfItem(atPath: path)
            return (attributes[.size] as? NSNumber)?.int64Value ?? 0
        }

        /// AsyncHTTPClient's and NIO's errors print as type names; say what happened instead. Matched by
        /// type and value (`HTTPClientError` is `Equatable`; NIO keeps the errno), never by their text.
        static func describe(_ error: any Error) -> String {
            if let error = error as? HTTPClientError {
                switch error {
                case .connectTimeout: return "connecting timed out"
                case .deadlineExceeded, .readTimeout, .writeTimeout: return "the request timed out"
                case .remoteConnectionClosed: return "the collector closed the connection"
                default: break
                }
            }
            if let errno = connectionErrno(error) {
                if errno == ECONNREFUSED { return "connection refused (is the collector running?)" }
                return "cannot connect: \(errnoDescription())"
            }
            if String(reflecting: type(of: error)).hasPrefix("NIOSSL.") { return "TLS failed: \(error)" }
            return String(describing: error)
        }

        /// The errno of a failed connection attempt, however NIO wrapped it.
        private static func connectionErrno(_ error: any Error) -> Int32? {
            switch error {
            case let error as IOError: error.errnoCode
            case let error as NIOConnectionError:
                error.connectionErrors.lazy.compactMap { connectionErrno($0.error) }.first
            default: nil
            }
        }

    }

    extension Duration {
        /// NIO's form of a Swift duration, for request deadlines.
        var timeAmount: TimeAmount {
            .nanoseconds(Int64(components.seconds) * 1_000_000_000 + components.attoseconds / 1_000_000_000)
        }
    }

    public struct ConnectionProblem: Error, Sendable, CustomStringConvertible {
        public var description: String
    }
#endif
