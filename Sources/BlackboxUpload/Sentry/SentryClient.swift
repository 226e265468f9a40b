#if Upload
    import AsyncHTTPClient
    import Blackbox
    import BlackboxCompression
    import BlackboxSentry
    import BlackboxSystem
    import Foundation
    import NIOCore
    import NIOHTTP1

    /// Sends spooled envelopes to a Sentry server's envelope endpoint, gzipped, with the DSN's key in
    /// `X-Sentry-Auth`, and keeps its rate limits: an envelope with an item of a limited category is
    /// not sent until the limit ends (it waits in the spool; Sentry's SDKs drop such items, but a
    /// crash report must not be lost to a quota that resets within the hour).
    public struct SentryClient: SpoolTransport {
        public var dsn: SentryDSN
        public var rateLimits: SentryRateLimits
        /// How long one upload may take, connection included. Default 60 s.
        public var requestTimeout: Duration = .seconds(60)
        /// The largest envelope sent (Sentry accepts 200 MiB compressed, Relay 1 MiB per event);
        /// the delivery writes far smaller ones, so a larger file is not one of its own.
        static let maxEnvelopeBytes = 64 << 20
        let http: HTTPClient

        public init(
            dsn: SentryDSN, rateLimits: SentryRateLimits = SentryRateLimits(),
            http: HTTPClient = CollectorClient.sharedHTTPClient
        ) {
            self.dsn = dsn
            self.rateLimits = rateLimits
            self.http = http
        }

        public func upload(
            file path: String, uploadID: UUID, progress: @escaping @Sendable (_ sent: Int64, _ total: Int64) -> Void
        ) async -> UploadOutcome {
            let envelope: [UInt8]
            do {
                envelope = try Self.read(path)
            } catch {
                return .rejected(ServerAnswer(status: 0, code: "unreadable_envelope", message: "\(error)"))
            }
            guard let types = SentryEnvelope.itemTypes(of: envelope) else {
                return .rejected(
                    ServerAnswer(status: 0, code: "invalid_envelope", message: "\(path) is not an envelope"))
            }
            let categories = Set(types.map(SentryEnvelope.Item.category(ofType:)))
            let now = ContinuousClock.now
            if let limited = categories.sorted().first(where: { rateLimits.limitedUntil($0, now: now) != nil }),
                let until = rateLimits.limitedUntil(limited, now: now)
            {
                return .deferred(reason: "the server limits \(limited) for another \(until - now)")
            }
            let body: [UInt8]
            do {
                body = try GzipData.compress(envelope)
            } catch {
                return .retryLater(reason: "cannot compress the envelope: \(error)")
            }
            var request = HTTPClientRequest(url: dsn.envelopeURL)
            request.method = .POST
            request.headers.add(name: "X-Sentry-Auth", value: dsn.authorization(client: Self.client))
            request.headers.add(name: "Content-Type", value: "application/x-sentry-envelope")
            request.headers.add(name: "Content-Encoding", value: "gzip")
            request.headers.add(name: "User-Agent", value: Self.client)
            request.body = .bytes(ByteBuffer(bytes: body))
            do {
                let response = try await http.execute(request, timeout: requestTimeout.timeAmount)
                let answer = try await response.body.collect(upTo: 1 << 20)
                let status = Int(response.status.code)
                rateLimits.update(
                    status: status, rateLimits: response.headers.first(name: "X-Sentry-Rate-Limits"),
                    retryAfter: response.headers.first(name: "Retry-After"))
                progress(Int64(body.count), Int64(body.count))
                return Self.classify(status: status, body: Array(buffer: answer), categories: categories)
            } catch {
                return .retryLater(reason: CollectorClient.describe(error))
            }
        }

        static let client = "\(SentryEvent.sdkName)/\(SentryEvent.sdkVersion)"

        /// Sentry's answers: 2xx accepted; 429 rate-limited (the limits are recorded; the envelope
        /// waits); 400 and 413 refused for good, as Sentry's SDKs drop them; 401/403 the DSN's key
        /// is wrong; anything else try again later.
        static func classify(status: Int, body: [UInt8], categories: Set<String>) -> UploadOutcome {
            let answer = ServerAnswer(status: status, body: body)
            switch status {
            case 200..<300: return .stored(duplicate: false)
            case 429:
                return .deferred(reason: "rate-limited (\(categories.sorted().joined(separator: ", "))): \(answer)")
            case 400, 413: return .rejected(answer)
            case 401, 403: return .unauthorized(answer)
            default: return .retryLater(reason: answer.description)
            }
        }

        static func read(_ path: String) throws -> [UInt8] {
            guard let bytes = DurableFile.read(path, limit: maxEnvelopeBytes + 1) else {
                throw UploadFailure.file(path, errnoDescription())
            }
            guard bytes.count <= maxEnvelopeBytes else {
                throw UploadFailure.file(path, "larger than \(maxEnvelopeBytes) bytes")
            }
            return bytes
        }
    }
#endif
